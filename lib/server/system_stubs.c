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
#include <sys/statvfs.h>
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

/* Opening a path only if the kernel can do it without waiting for a disk:
   openat2 with RESOLVE_CACHED (Linux 5.12) fails with EAGAIN unless every
   component of the path is in the dentry cache. The static server tries it
   on the event loop's thread and sends the rare miss to its thread pool, so
   a stalled disk never stalls the loop, and a hot file costs no hand-off.
   [how]: 0 the path itself (O_PATH | O_NOFOLLOW, for lstat), 1 what it
   names (O_PATH), 2 open for reading (O_RDONLY | O_NONBLOCK). ENOSYS or
   EINVAL (an older kernel) tell the caller to stop trying. */
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <caml/fail.h>

value braid_open_cached(value path, value how)
{
  CAMLparam2(path, how);
  struct open_how o;
  long fd;
  if (!caml_string_is_c_safe(path)) caml_unix_error(ENOENT, "openat2", path);
  memset(&o, 0, sizeof o);
  switch (Int_val(how)) {
  case 0: o.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC; break;
  case 1: o.flags = O_PATH | O_CLOEXEC; break;
  default: o.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC; break;
  }
  o.resolve = RESOLVE_CACHED;
  do {
    fd = syscall(SYS_openat2, AT_FDCWD, String_val(path), &o, sizeof o);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) caml_unix_error(errno, "openat2", path);
  CAMLreturn(Val_int(fd));
}

/* Opening a regular file for reading where waiting is allowed (a thread of
   the pool): a FIFO swapped in for the file must not block the open until a
   writer comes, so the path is first opened with O_PATH (which never waits
   and breaks no lease), checked to be a regular file, and only then opened
   for reading through /proc/self/fd: the same inode, with the blocking
   semantics of a regular file (a lease holder, say, makes it wait). */
#include <stdio.h>
#include <sys/stat.h>
#include <caml/signals.h>

value braid_open_regular_for_reading(value path)
{
  CAMLparam1(path);
  char *name;
  char through[64];
  struct stat st;
  int at, fd = -1, error = 0;
  if (!caml_string_is_c_safe(path)) caml_unix_error(ENOENT, "open", path);
  name = caml_stat_strdup(String_val(path));
  caml_enter_blocking_section();
  at = open(name, O_PATH | O_CLOEXEC);
  if (at < 0) error = errno;
  else if (fstat(at, &st) < 0) error = errno;
  else if (!S_ISREG(st.st_mode)) error = EACCES;
  else {
    snprintf(through, sizeof through, "/proc/self/fd/%d", at);
    do {
      fd = open(through, O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0 && errno == ENOENT) {
      /* No /proc (a chroot, a minimal container): open the name without
         blocking, and check again that it is a regular file. */
      fd = open(name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) {
        if (fstat(fd, &st) < 0) error = errno;
        else if (!S_ISREG(st.st_mode)) error = EACCES;
        if (error != 0) {
          close(fd);
          fd = -1;
        }
      }
    }
    if (fd < 0 && error == 0) error = errno;
  }
  if (at >= 0) close(at);
  caml_leave_blocking_section();
  caml_stat_free(name);
  if (error != 0) caml_unix_error(error, "open", path);
  CAMLreturn(Val_int(fd));
}

/* A descriptor number inherited from the parent (systemd's socket
   activation passes listening sockets as 3, 4, ...): a Unix.file_descr is
   that int. Checked to be open. */
value braid_inherited_fd(value n)
{
  if (fcntl(Int_val(n), F_GETFD) < 0) caml_uerror("fcntl", Nothing);
  return n;
}


/* The bytes an unprivileged process may still write on the file system
   holding [path] (statvfs: f_bavail blocks of f_frsize bytes): the ground
   of the default spool budget. */
value braid_free_bytes(value path)
{
  CAMLparam1(path);
  struct statvfs s;
  if (!caml_string_is_c_safe(path)) caml_unix_error(ENOENT, "statvfs", path);
  if (statvfs(String_val(path), &s) != 0) caml_uerror("statvfs", path);
  unsigned long long bytes =
      (unsigned long long)s.f_bavail * (unsigned long long)s.f_frsize;
  if (bytes > (unsigned long long)Max_long) bytes = Max_long;
  CAMLreturn(Val_long((long)bytes));
}
