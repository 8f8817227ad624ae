/* Braid IO: epoll, eventfd and the few socket calls the event loop makes on
   every message. All descriptors handled here are non-blocking, so the calls
   return at once and keep the runtime lock: that lets read and send work
   directly on OCaml bytes without copying, and saves a lock round trip per
   call. Only epoll_wait with a non-zero timeout releases the lock. */

#define _GNU_SOURCE
#define CAML_NAME_SPACE
#include <caml/alloc.h>
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>
#include <caml/signals.h>
#include <caml/socketaddr.h>
#include <caml/unixsupport.h>

#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The OCaml side (epoll.ml) spells these flags as literals. */
_Static_assert(EPOLLIN == 0x001, "EPOLLIN");
_Static_assert(EPOLLOUT == 0x004, "EPOLLOUT");
_Static_assert(EPOLLERR == 0x008, "EPOLLERR");
_Static_assert(EPOLLHUP == 0x010, "EPOLLHUP");
_Static_assert(EPOLLRDHUP == 0x2000, "EPOLLRDHUP");
_Static_assert(EPOLLONESHOT == (1u << 30), "EPOLLONESHOT");
_Static_assert(EPOLLET == (1u << 31), "EPOLLET");

#define WOULD_BLOCK(e) ((e) == EAGAIN || (e) == EWOULDBLOCK)

value braid_io_epoll_create(value unit) {
  (void)unit;
  int fd = epoll_create1(EPOLL_CLOEXEC);
  if (fd < 0) caml_uerror("epoll_create1", Nothing);
  return Val_int(fd);
}

/* [op] is the OCaml variant Add | Modify | Delete. */
value braid_io_epoll_ctl(value epfd, value op, value fd, value flags,
                         value token) {
  static const int ops[] = {EPOLL_CTL_ADD, EPOLL_CTL_MOD, EPOLL_CTL_DEL};
  struct epoll_event ev;
  ev.events = (uint32_t)Long_val(flags);
  ev.data.u64 = (uint64_t)Long_val(token);
  if (epoll_ctl(Int_val(epfd), ops[Int_val(op)], Int_val(fd), &ev) < 0)
    caml_uerror("epoll_ctl", Nothing);
  return Val_unit;
}

/* Waits into a stack array, then copies (token, flags) pairs into the OCaml
   int array [buffer]: the array may move while the lock is released, and
   the stores are of immediates, so they need no write barrier. EINTR (a
   signal) is reported as zero events. */
#define MAX_EVENTS 512

value braid_io_epoll_wait(value epfd, value buffer, value timeout_ms) {
  CAMLparam1(buffer);
  struct epoll_event events[MAX_EVENTS];
  int capacity = (int)(Wosize_val(buffer) / 2);
  if (capacity > MAX_EVENTS) capacity = MAX_EVENTS;
  if (capacity < 1) caml_invalid_argument("Epoll.wait: buffer too small");
  int timeout = Int_val(timeout_ms);
  int n, error;
  if (timeout == 0) {
    n = epoll_wait(Int_val(epfd), events, capacity, 0);
    error = errno;
  } else {
    caml_enter_blocking_section();
    n = epoll_wait(Int_val(epfd), events, capacity, timeout);
    error = errno;
    caml_leave_blocking_section();
  }
  if (n < 0) {
    if (error == EINTR) CAMLreturn(Val_int(0));
    caml_unix_error(error, "epoll_wait", Nothing);
  }
  for (int i = 0; i < n; i++) {
    Field(buffer, 2 * i) = Val_long((intnat)events[i].data.u64);
    Field(buffer, 2 * i + 1) = Val_long((intnat)events[i].events);
  }
  CAMLreturn(Val_int(n));
}

value braid_io_eventfd(value unit) {
  (void)unit;
  int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) caml_uerror("eventfd", Nothing);
  return Val_int(fd);
}

/* A full counter (2^64 - 2 pending signals) cannot happen in practice; it
   would still wake the reader, so EAGAIN is ignored. */
value braid_io_eventfd_signal(value fd) {
  uint64_t one = 1;
  ssize_t r;
  do r = write(Int_val(fd), &one, sizeof one);
  while (r < 0 && errno == EINTR);
  if (r < 0 && !WOULD_BLOCK(errno)) caml_uerror("eventfd write", Nothing);
  return Val_unit;
}

value braid_io_eventfd_drain(value fd) {
  uint64_t count;
  ssize_t r;
  do r = read(Int_val(fd), &count, sizeof count);
  while (r < 0 && errno == EINTR);
  if (r < 0 && !WOULD_BLOCK(errno)) caml_uerror("eventfd read", Nothing);
  return Val_unit;
}

/* read/write/send: the byte count, or -1 if the call would block. The
   bounds were checked by the caller. */
value braid_io_read(value fd, value buf, value ofs, value len) {
  ssize_t r;
  do r = read(Int_val(fd), &Byte(buf, Long_val(ofs)), Long_val(len));
  while (r < 0 && errno == EINTR);
  if (r < 0) {
    if (WOULD_BLOCK(errno)) return Val_long(-1);
    caml_uerror("read", Nothing);
  }
  return Val_long(r);
}

value braid_io_recv(value fd, value buf, value ofs, value len) {
  ssize_t r;
  do r = recv(Int_val(fd), &Byte(buf, Long_val(ofs)), Long_val(len), 0);
  while (r < 0 && errno == EINTR);
  if (r < 0) {
    if (WOULD_BLOCK(errno)) return Val_long(-1);
    caml_uerror("recv", Nothing);
  }
  return Val_long(r);
}

value braid_io_write(value fd, value buf, value ofs, value len) {
  ssize_t r;
  do r = write(Int_val(fd), &Byte(buf, Long_val(ofs)), Long_val(len));
  while (r < 0 && errno == EINTR);
  if (r < 0) {
    if (WOULD_BLOCK(errno)) return Val_long(-1);
    caml_uerror("write", Nothing);
  }
  return Val_long(r);
}

/* MSG_NOSIGNAL: a peer that went away gives EPIPE, not a process-killing
   SIGPIPE. */
value braid_io_send(value fd, value buf, value ofs, value len) {
  ssize_t r;
  do r = send(Int_val(fd), &Byte(buf, Long_val(ofs)), Long_val(len),
              MSG_NOSIGNAL);
  while (r < 0 && errno == EINTR);
  if (r < 0) {
    if (WOULD_BLOCK(errno)) return Val_long(-1);
    caml_uerror("send", Nothing);
  }
  return Val_long(r);
}

/* accept4: Some (fd, addr), the new socket non-blocking and close-on-exec;
   None if no connection is pending. A connection reset before it was
   accepted is skipped. */
value braid_io_accept(value fd) {
  CAMLparam1(fd);
  CAMLlocal2(addr, pair);
  union sock_addr_union sa;
  socklen_param_type len = sizeof sa;
  int r;
  do r = accept4(Int_val(fd), &sa.s_gen, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
  while (r < 0 && (errno == EINTR || errno == ECONNABORTED));
  if (r < 0) {
    if (WOULD_BLOCK(errno)) CAMLreturn(Val_none);
    caml_uerror("accept", Nothing);
  }
  addr = caml_unix_alloc_sockaddr(&sa, len, r);
  pair = caml_alloc_small(2, 0);
  Field(pair, 0) = Val_int(r);
  Field(pair, 1) = addr;
  CAMLreturn(caml_alloc_some(pair));
}

/* The monotonic clock in nanoseconds as an OCaml int: mtime's int64 is boxed,
   an allocation on every reading, and the loop and the server read the clock
   several times per request. CLOCK_MONOTONIC, as mtime uses on Linux, so the
   two agree. */
CAMLprim value braid_monotonic_ns(value unit) {
  (void)unit;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return Val_long((intnat)ts.tv_sec * 1000000000 + (intnat)ts.tv_nsec);
}
