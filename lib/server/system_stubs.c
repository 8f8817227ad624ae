/* What the server asks of the system that OCaml's Unix library lacks.

   malloc_trim: OCaml's major heap takes its memory from malloc, and glibc
   keeps what is freed inside its main arena (the brk heap) unless it lies at
   the top: after a compaction the pages stay resident. malloc_trim(0) gives
   the free pages of every arena back (madvise), wherever they lie. Elsewhere
   than glibc, nothing is done.

   RLIMIT_NOFILE: a server with many connections needs as many descriptors
   as its hard limit allows, as nginx and h2o take at start. */

#define _GNU_SOURCE
#include <caml/mlvalues.h>
#include <caml/alloc.h>
#include <caml/memory.h>
#include <caml/unixsupport.h>
#include <errno.h>
#include <sys/resource.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

value braid_malloc_trim(value unit)
{
  (void)unit;
#if defined(__GLIBC__)
  return Val_bool(malloc_trim(0));
#else
  return Val_false;
#endif
}

/* RLIM_INFINITY as the OCaml side sees it: max_int. */
static value of_rlim(rlim_t r)
{
  if (r == RLIM_INFINITY || r > (rlim_t)Max_long) return Val_long(Max_long);
  return Val_long((long)r);
}

value braid_nofile_limits(value unit)
{
  CAMLparam1(unit);
  CAMLlocal1(pair);
  struct rlimit l;
  if (getrlimit(RLIMIT_NOFILE, &l) != 0) caml_uerror("getrlimit", Nothing);
  pair = caml_alloc_tuple(2);
  Store_field(pair, 0, of_rlim(l.rlim_cur));
  Store_field(pair, 1, of_rlim(l.rlim_max));
  CAMLreturn(pair);
}

value braid_set_nofile_soft(value soft)
{
  CAMLparam1(soft);
  struct rlimit l;
  if (getrlimit(RLIMIT_NOFILE, &l) != 0) caml_uerror("getrlimit", Nothing);
  l.rlim_cur = (rlim_t)Long_val(soft);
  if (setrlimit(RLIMIT_NOFILE, &l) != 0) caml_uerror("setrlimit", Nothing);
  CAMLreturn(Val_unit);
}
