/* What the braid command asks of the system that OCaml's Unix library
   lacks: a descriptor inherited from its parent, as a Unix.file_descr. */

#define _GNU_SOURCE
#include <caml/mlvalues.h>
#include <caml/unixsupport.h>
#include <fcntl.h>

/* A descriptor number inherited from the parent (systemd's socket
   activation passes listening sockets as 3, 4, ...): a Unix.file_descr is
   that int. Checked to be open. */
value braid_inherited_fd(value n)
{
  if (fcntl(Int_val(n), F_GETFD) < 0) caml_uerror("fcntl", Nothing);
  return n;
}
