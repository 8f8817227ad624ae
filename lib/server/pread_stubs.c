/* pread(2) straight into OCaml bytes, for HTTP/2's DATA frames
   (http2_connection.ml): the file's bytes land where the frame's payload
   goes out from, with no buffer in between and no seek (the position is
   the call's, so a descriptor shared by streams is safe).

   The runtime lock is kept while the bytes are the destination: released,
   a minor collection or a compaction (System.give_back_memory runs
   Gc.compact) could move them under the kernel's copy. Kept, the call must
   not wait for a disk: it is first made with RWF_NOWAIT (preadv2), which
   reads only what the page cache holds and answers EAGAIN for the rest.
   What it does not hold is read with the lock released, into a malloc'd
   buffer, then copied: a stalled disk stalls this fiber's loop, as
   sendfile(2) does for HTTP/1.1, but neither the domain's other threads
   nor the other domains' collections. A kernel or file system without
   RWF_NOWAIT (EOPNOTSUPP, ENOSYS) takes that path every time. */

#define _GNU_SOURCE
#define CAML_NAME_SPACE
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>
#include <caml/signals.h>
#include <caml/unixsupport.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* [len] bytes at most of [fd] from its offset [at], into a buffer of its
   own with the runtime lock released, then into [buf] at [ofs]. */
static value pread_released(int fd, value buf, long ofs, size_t len,
                            off_t at) {
  CAMLparam1(buf);
  char *bounce = malloc(len > 0 ? len : 1);
  if (bounce == NULL) caml_raise_out_of_memory();
  ssize_t done;
  int error;
  caml_enter_blocking_section();
  do done = pread(fd, bounce, len, at);
  while (done < 0 && errno == EINTR);
  error = errno;
  caml_leave_blocking_section();
  if (done < 0) {
    free(bounce);
    caml_unix_error(error, "pread", Nothing);
  }
  memcpy(Bytes_val(buf) + ofs, bounce, (size_t)done);
  free(bounce);
  CAMLreturn(Val_long(done));
}

/* The bytes between two slots: an HTTP/2 frame header. */
#define GAP 9
/* The most slots one call fills (a batch of DATA frames is smaller). */
#define MAX_SLOTS 64

/* braid_pread_slots fd buf ofs slot len at: at most [len] bytes of [fd]
   from its offset [at] into [buf], in slots of [slot] bytes (the last one
   shorter), the first at [ofs] and each next one [GAP] bytes past the end
   of the one before: the payloads of consecutive DATA frames, read by one
   system call (one slot of [len] bytes: a plain pread). At most MAX_SLOTS
   slots; the count read may be short, 0 at the end of the file. Bounds are
   the caller's to check. Raises Unix.Unix_error. */
value braid_pread_slots(value fd, value buf, value ofs, value slot,
                        value len, value at) {
  int descriptor = Int_val(fd);
  long o = Long_val(ofs);
  size_t piece = (size_t)Long_val(slot);
  size_t n = (size_t)Long_val(len);
  off_t position = (off_t)Long_val(at);
  if (piece == 0) caml_invalid_argument("braid_pread_slots");
  if (n > piece * MAX_SLOTS) n = piece * MAX_SLOTS;
#ifdef RWF_NOWAIT
  struct iovec iov[MAX_SLOTS];
  int count = 0;
  for (size_t i = 0; i < n; i += piece, count++) {
    iov[count].iov_base = Bytes_val(buf) + o + (i / piece) * (piece + GAP);
    iov[count].iov_len = n - i < piece ? n - i : piece;
  }
  ssize_t done;
  do done = preadv2(descriptor, iov, count, position, RWF_NOWAIT);
  while (done < 0 && errno == EINTR);
  if (done >= 0) return Val_long(done);
  if (errno != EAGAIN && errno != EOPNOTSUPP && errno != ENOSYS)
    caml_unix_error(errno, "pread", Nothing);
#endif
  /* From the disk: the first slot only, through the lock-releasing path;
     the caller comes back for the rest. */
  return pread_released(descriptor, buf, o, n < piece ? n : piece, position);
}

value braid_pread_slots_bytecode(value *argv, int argn) {
  (void)argn;
  return braid_pread_slots(argv[0], argv[1], argv[2], argv[3], argv[4],
                           argv[5]);
}
