/* libpq owns its socket and hands it out as an int; braid_io's loop must own
   the descriptor it waits on (Fd.of_unix closes it with its switch). So the
   loop gets a duplicate: closing it leaves libpq's socket open, and
   PQfinish closing libpq's leaves the loop's valid until Fd.close. Both
   name one open file description, so the loop's readiness is libpq's. An
   int is not a Unix.file_descr to OCaml's type checker, hence C, not
   Obj.magic. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>

#include <caml/mlvalues.h>
#include <caml/unixsupport.h>

value braid_postgres_dup_socket(value socket)
{
  int copy = fcntl(Int_val(socket), F_DUPFD_CLOEXEC, 0);
  if (copy < 0) caml_uerror("dup", Nothing);
  return Val_int(copy);
}
