/* Bytes from the kernel's CSPRNG through getrandom(2).

   getrandom rather than reading /dev/urandom: no file descriptor to open,
   keep or leak across fork/exec, nothing to fail when the descriptor table
   is full or /dev is missing (a chroot, a container), and no read racing a
   close on another domain. With flags 0 it blocks only until the pool is
   first seeded at boot, then never; calls of up to 256 bytes are not
   interrupted by signals, longer ones may return short, hence the loop.

   The runtime lock is kept: a token is a few dozen bytes, microseconds. */

#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <caml/alloc.h>
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>

CAMLprim value braid_web_getrandom(value v_len) {
  CAMLparam1(v_len);
  CAMLlocal1(v_out);
  intnat len = Long_val(v_len);
  if (len < 0)
    caml_invalid_argument("Token.random_bytes");
  v_out = caml_alloc_string(len);
  intnat done = 0;
  while (done < len) {
    /* The string does not move: the runtime lock is held throughout. */
    ssize_t n = getrandom((unsigned char *)Bytes_val(v_out) + done,
                          (size_t)(len - done), 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      caml_failwith(strerror(errno));
    }
    done += n;
  }
  CAMLreturn(v_out);
}
