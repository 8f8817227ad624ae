/* Braid IO: sendfile(2) from a file to a socket, and send(2) with MSG_MORE
   for the bytes that precede it (an HTTP head), so that both leave in the
   same packet. */

#define _GNU_SOURCE
#define CAML_NAME_SPACE
#include <caml/memory.h>
#include <caml/mlvalues.h>
#include <caml/signals.h>
#include <caml/unixsupport.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/types.h>

#define WOULD_BLOCK(e) ((e) == EAGAIN || (e) == EWOULDBLOCK)

/* sendfile(2) has no MSG_NOSIGNAL: writing to a socket whose peer is gone
   raises SIGPIPE, which kills the process by default, even when the call
   then returns the bytes it sent before the error. Every event loop blocks
   SIGPIPE in its own thread while it runs (braid_io_block_sigpipe below,
   called by Loop.run), and Net.sendfile runs only on a loop's thread: the
   signal then stays pending, harmless, and the call fails with EPIPE. One
   system call per sendfile, where a guard around each call cost two more
   (rt_sigprocmask, before and after). */

static void sigpipe_set(sigset_t *set) {
  sigemptyset(set);
  sigaddset(set, SIGPIPE);
}

/* Blocks SIGPIPE in the calling thread; true if it was blocked already. */
value braid_io_block_sigpipe(value unit) {
  (void)unit;
  sigset_t pipe_set, old;
  sigpipe_set(&pipe_set);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  return Val_bool(sigismember(&old, SIGPIPE));
}

/* Unblocks SIGPIPE in the calling thread, first taking (sigtimedwait, no
   wait) the one a failed send may have left pending: unblocked, it would
   kill the process. */
value braid_io_unblock_sigpipe(value unit) {
  (void)unit;
  sigset_t pipe_set;
  struct timespec zero = {0, 0};
  sigpipe_set(&pipe_set);
  while (sigtimedwait(&pipe_set, NULL, &zero) >= 0 || errno == EINTR) {
  }
  pthread_sigmask(SIG_UNBLOCK, &pipe_set, NULL);
  return Val_unit;
}

/* sendfile(out, in, &off, len): the byte count (0 once [in] has no byte at
   [off]), or -1 if [out] is full. [out] is non-blocking, but the call reads
   [in] from the page cache and, for a page not in memory, waits for the
   disk: so the runtime lock is released around the call itself (only C
   values are used meanwhile), as Unix.read does for files. EINTR is
   retried; other errors raise Unix.Unix_error (EPIPE for a vanished peer,
   without a SIGPIPE in a loop's thread, see above). The caller checked that [off] and [len] are not
   negative. */
value braid_io_sendfile(value out, value in, value off, value len) {
  CAMLparam4(out, in, off, len);
  int out_fd = Int_val(out), in_fd = Int_val(in);
  off_t offset = (off_t)Long_val(off);
  size_t count = (size_t)Long_val(len);
  ssize_t r;
  int error;
  do {
    caml_enter_blocking_section();
    r = sendfile(out_fd, in_fd, &offset, count);
    error = errno;
    caml_leave_blocking_section();
  } while (r < 0 && error == EINTR);
  if (r < 0) {
    if (WOULD_BLOCK(error)) CAMLreturn(Val_long(-1));
    caml_unix_error(error, "sendfile", Nothing);
  }
  CAMLreturn(Val_long(r));
}

/* send(2) with MSG_MORE: the kernel keeps the bytes until the next send
   (or sendfile) on the socket completes the packet, instead of sending
   them alone (TCP_NODELAY notwithstanding). MSG_NOSIGNAL as in
   braid_io_send. The byte count, or -1 if the call would block. The
   socket is non-blocking: the lock is kept and [buf] used in place. */
value braid_io_send_more(value fd, value buf, value ofs, value len) {
  ssize_t r;
  do r = send(Int_val(fd), &Byte(buf, Long_val(ofs)), Long_val(len),
              MSG_NOSIGNAL | MSG_MORE);
  while (r < 0 && errno == EINTR);
  if (r < 0) {
    if (WOULD_BLOCK(errno)) return Val_long(-1);
    caml_uerror("send", Nothing);
  }
  return Val_long(r);
}
