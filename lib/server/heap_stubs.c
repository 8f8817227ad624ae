/* Returning the memory freed by a heap compaction to the system.

   OCaml's major heap takes its memory from malloc, and glibc keeps what is
   freed inside its main arena (the brk heap) unless it lies at the top:
   after a compaction the pages stay resident. malloc_trim(0) gives the free
   pages of every arena back (madvise), wherever they lie. Elsewhere than
   glibc, nothing is done. */

#define _GNU_SOURCE
#include <caml/mlvalues.h>
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
