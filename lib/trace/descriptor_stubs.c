/* A descriptor's number, for the "waits on descriptor N" of a trace. On
   Unix, Unix.file_descr is the number itself, as an OCaml int: this says so
   in the one place that relies on it, instead of a cast in OCaml. */

#include <caml/mlvalues.h>

value braid_trace_descriptor_number(value fd)
{
  return Val_int(Int_val(fd));
}
