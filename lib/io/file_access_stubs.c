/* File access the event loop needs and OCaml's Unix library lacks: opening a
   path only if that cannot wait for a disk, opening a regular file (and
   nothing else) for reading, and the free space of a file system. */

#define _GNU_SOURCE
#include <caml/mlvalues.h>
#include <caml/alloc.h>
#include <caml/memory.h>
#include <caml/unixsupport.h>
#include <errno.h>
#include <sys/statvfs.h>

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
