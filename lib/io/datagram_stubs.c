/* Braid IO: the datagram calls of Udp. Like the calls in epoll_stubs.c they
   run on non-blocking sockets only, so they return at once and keep the
   runtime lock: they work directly on OCaml bytes, without the copy through a
   64 KiB buffer that Unix.recvfrom and Unix.sendto make. */

#define _GNU_SOURCE
#define CAML_NAME_SPACE
#include <caml/alloc.h>
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>
#include <caml/socketaddr.h>
#include <caml/unixsupport.h>

#include <errno.h>
#include <sys/socket.h>

#define WOULD_BLOCK(e) ((e) == EAGAIN || (e) == EWOULDBLOCK)

/* recvfrom with MSG_TRUNC: Some (length, source), where length is the whole
   datagram's, even when only the first len bytes fitted in the buffer; None
   if no datagram is waiting. The bounds were checked by the caller. */
value braid_io_recvfrom(value fd, value buf, value ofs, value len) {
  CAMLparam4(fd, buf, ofs, len);
  CAMLlocal2(source, pair);
  union sock_addr_union sa;
  socklen_param_type sa_len;
  ssize_t r;
  do {
    sa_len = sizeof sa;
    r = recvfrom(Int_val(fd), &Byte(buf, Long_val(ofs)), Long_val(len),
                 MSG_TRUNC, &sa.s_gen, &sa_len);
  } while (r < 0 && errno == EINTR);
  if (r < 0) {
    if (WOULD_BLOCK(errno)) CAMLreturn(Val_none);
    caml_uerror("recvfrom", Nothing);
  }
  source = caml_unix_alloc_sockaddr(&sa, sa_len, -1);
  pair = caml_alloc_small(2, 0);
  Field(pair, 0) = Val_long(r);
  Field(pair, 1) = source;
  CAMLreturn(caml_alloc_some(pair));
}

/* sendto: the byte count (a datagram goes whole), or -1 if the socket's
   buffer is full. The bounds were checked by the caller. */
value braid_io_sendto(value fd, value buf, value ofs, value len, value dest) {
  union sock_addr_union sa;
  socklen_param_type sa_len;
  ssize_t r;
  caml_unix_get_sockaddr(dest, &sa, &sa_len);
  do r = sendto(Int_val(fd), &Byte(buf, Long_val(ofs)), Long_val(len),
                MSG_NOSIGNAL, &sa.s_gen, sa_len);
  while (r < 0 && errno == EINTR);
  if (r < 0) {
    if (WOULD_BLOCK(errno)) return Val_long(-1);
    caml_uerror("sendto", Nothing);
  }
  return Val_long(r);
}
