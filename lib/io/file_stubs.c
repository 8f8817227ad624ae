/* Braid IO: reads and writes of files, for the threads of a Blocking pool.
   A file's read or write may wait for the disk, so each call releases the
   runtime lock around the system call. The OCaml bytes may move meanwhile (a
   minor collection, a compaction), so the data goes through a buffer the
   call mallocs for itself, as the Unix library does, but of up to 1 MiB
   rather than 64 KiB: a large read costs one system call per MiB. The
   OCaml side (file_syscall.ml) checks the bounds and loops. */

#define _GNU_SOURCE
#define CAML_NAME_SPACE
#include <caml/bigarray.h>
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>
#include <caml/signals.h>
#include <caml/unixsupport.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* The most bytes one call moves; file_syscall.ml spells it too. */
#define CHUNK (1L << 20)

enum direction { READ, WRITE };

/* Moves up to [len] bytes between [fd] and [buf] at [ofs], at the file's
   offset [at], or at the file's own position if [at] is negative. EINTR is
   retried; another error raises Unix.Unix_error. */
static value transfer(value fd, value buf, value ofs, value len, value at,
                      enum direction direction) {
  CAMLparam5(fd, buf, ofs, len, at);
  long n = Long_val(len);
  long position = Long_val(at);
  const char *name = direction == READ ? (position < 0 ? "read" : "pread")
                                       : (position < 0 ? "write" : "pwrite");
  if (n > CHUNK) n = CHUNK;
  char *bounce = malloc(n > 0 ? (size_t)n : 1);
  if (bounce == NULL) caml_raise_out_of_memory();
  if (direction == WRITE)
    memcpy(bounce, String_val(buf) + Long_val(ofs), (size_t)n);
  int descriptor = Int_val(fd);
  ssize_t done;
  int error;
  caml_enter_blocking_section();
  do {
    if (direction == READ)
      done = position < 0 ? read(descriptor, bounce, (size_t)n)
                          : pread(descriptor, bounce, (size_t)n, position);
    else
      done = position < 0 ? write(descriptor, bounce, (size_t)n)
                          : pwrite(descriptor, bounce, (size_t)n, position);
  } while (done < 0 && errno == EINTR);
  error = errno;
  caml_leave_blocking_section();
  if (done < 0) {
    free(bounce);
    caml_unix_error(error, name, Nothing);
  }
  if (direction == READ)
    memcpy(Bytes_val(buf) + Long_val(ofs), bounce, (size_t)done);
  free(bounce);
  CAMLreturn(Val_long(done));
}

value braid_io_file_read(value fd, value buf, value ofs, value len,
                         value at) {
  return transfer(fd, buf, ofs, len, at, READ);
}

value braid_io_file_write(value fd, value buf, value ofs, value len,
                          value at) {
  return transfer(fd, buf, ofs, len, at, WRITE);
}

/* Reads into a bigarray, which never moves: no bounce buffer, and the
   runtime lock is released for the whole system call. The OCaml side
   checks that [len] fits the bigarray. */
value braid_io_file_read_bigarray(value fd, value ba, value len, value at) {
  CAMLparam4(fd, ba, len, at);
  long position = Long_val(at);
  size_t n = (size_t)Long_val(len);
  char *data = (char *)Caml_ba_data_val(ba);
  int descriptor = Int_val(fd);
  ssize_t done;
  int error;
  caml_enter_blocking_section();
  do {
    done = position < 0 ? read(descriptor, data, n)
                        : pread(descriptor, data, n, position);
  } while (done < 0 && errno == EINTR);
  error = errno;
  caml_leave_blocking_section();
  if (done < 0)
    caml_unix_error(error, position < 0 ? "read" : "pread", Nothing);
  CAMLreturn(Val_long(done));
}

/* memcpy from a bigarray into bytes; bounds checked by the caller. */
value braid_io_file_blit_bigarray(value ba, value src_off, value buf,
                                  value dst_off, value len) {
  memcpy(Bytes_val(buf) + Long_val(dst_off),
         (char *)Caml_ba_data_val(ba) + Long_val(src_off),
         (size_t)Long_val(len));
  return Val_unit;
}
