/* Braid IO: starting child processes and watching them exit.

   OCaml 5's Unix.fork refuses to run while several domains exist, and a
   fork of a multi-threaded process may only call async-signal-safe
   functions before exec anyway. posix_spawn does the whole job: glibc
   clones with CLONE_VM | CLONE_VFORK, runs the file actions, execs, and
   reports an exec failure (a missing program, say) to the parent as the
   call's result, so the caller gets an exception instead of a child that
   exits with 127.

   Everything the child needs is copied to C memory first, so the runtime
   lock is released while the kernel creates the child and the child
   execs: the other domains need not wait for this one to reach a safepoint
   in the meantime. */

#define _GNU_SOURCE
#define CAML_NAME_SPACE
#include <caml/alloc.h>
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>
#include <caml/signals.h>
#include <caml/unixsupport.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

/* What the OCaml side (process.ml, type child_fd) asks for each of the
   child's descriptors 0, 1, 2 and any after them: a descriptor to
   duplicate (>= 0) or one of these. */
#define STDIO_INHERIT (-1)
#define STDIO_NULL (-2)

static int child_fd(value v) {
  if (Is_block(v)) return Int_val(Field(v, 0)); /* Dup fd */
  return Int_val(v) == 0 ? STDIO_INHERIT : STDIO_NULL;
}

/* A NULL-terminated copy of an OCaml string array, in C memory. */
static char **copy_strings(value strings) {
  mlsize_t n = Wosize_val(strings);
  char **copy = caml_stat_alloc((n + 1) * sizeof(char *));
  for (mlsize_t i = 0; i < n; i++)
    copy[i] = caml_stat_strdup(String_val(Field(strings, i)));
  copy[n] = NULL;
  return copy;
}

static void free_strings(char **strings) {
  if (strings == NULL) return;
  for (char **s = strings; *s != NULL; s++) caml_stat_free(*s);
  caml_stat_free(strings);
}

/* Builds the attributes and file actions, spawns, and returns 0 and the
   pid, or the error code. Runs without the runtime lock: touches no OCaml
   value. */
/* The most descriptors a child is given: 0, 1, 2 and a few more (a
   server's listening sockets and a pipe, for a binary upgrade). */
#define MAX_CHILD_FDS 16

/* Builds the attributes and file actions, spawns, and returns 0 and the
   pid, or the error code. Runs without the runtime lock: touches no OCaml
   value. Descriptor [i] of the child is [fds[i]]; the child's others are
   this process's that are not close-on-exec (Braid opens none). */
static int spawn(pid_t *pid, const char *prog, char **argv, char **envp,
                 const char *cwd, const int *fds, int count) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  int moved[MAX_CHILD_FDS];
  for (int i = 0; i < count; i++) moved[i] = -1;
  int err = posix_spawn_file_actions_init(&actions);
  if (err != 0) return err;
  err = posix_spawnattr_init(&attr);
  if (err != 0) {
    posix_spawn_file_actions_destroy(&actions);
    return err;
  }
  /* The child starts with no signal blocked and every signal at its
     default disposition, whatever this process did to its own: an ignored
     SIGPIPE, say, would otherwise be inherited across exec. */
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  err = posix_spawnattr_setflags(&attr,
                                 POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  if (err == 0) err = posix_spawnattr_setsigmask(&attr, &none);
  if (err == 0) err = posix_spawnattr_setsigdefault(&attr, &all);
  /* A source among the targets that is not its own target would be
     overwritten by an earlier dup2 (stdout given the parent's stdin while
     stdin is a pipe, say): give it a number above them first. It is
     close-on-exec, like every descriptor but the child's targets. */
  for (int i = 0; i < count && err == 0; i++) {
    if (fds[i] >= 0 && fds[i] < count && fds[i] != i) {
      moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, count);
      if (moved[i] < 0) err = errno;
    }
  }
  for (int i = 0; i < count && err == 0; i++) {
    int source = moved[i] >= 0 ? moved[i] : fds[i];
    if (source == STDIO_NULL)
      err = posix_spawn_file_actions_addopen(&actions, i, "/dev/null",
                                             i == 0 ? O_RDONLY : O_WRONLY, 0);
    else if (source >= 0)
      /* dup2 gives the target no close-on-exec flag; with source = i,
         glibc (>= 2.29) clears the flag instead. */
      err = posix_spawn_file_actions_adddup2(&actions, source, i);
  }
  if (err == 0 && cwd != NULL)
    err = posix_spawn_file_actions_addchdir_np(&actions, cwd);
  if (err == 0)
    /* Looks [prog] up in this process's PATH unless it has a slash. */
    err = posix_spawnp(pid, prog, &actions, &attr, argv,
                       envp != NULL ? envp : environ);
  for (int i = 0; i < count; i++)
    if (moved[i] >= 0) close(moved[i]);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  return err;
}

/* [fds] is a child_fd array (3 to MAX_CHILD_FDS); [env] and [cwd] are
   options. The OCaml side has checked that no string holds a NUL byte. */
value braid_io_process_spawn(value prog, value argv, value env, value cwd,
                             value vfds) {
  CAMLparam5(prog, argv, env, cwd, vfds);
  int fds[MAX_CHILD_FDS];
  int count = (int)Wosize_val(vfds);
  if (count > MAX_CHILD_FDS) caml_invalid_argument("Braid_io.Process: descriptors");
  for (int i = 0; i < count; i++) fds[i] = child_fd(Field(vfds, i));
  char *c_prog = caml_stat_strdup(String_val(prog));
  char **c_argv = copy_strings(argv);
  char **c_env = Is_some(env) ? copy_strings(Some_val(env)) : NULL;
  char *c_cwd = Is_some(cwd) ? caml_stat_strdup(String_val(Some_val(cwd)))
                             : NULL;
  pid_t pid = -1;
  caml_enter_blocking_section();
  int err = spawn(&pid, c_prog, c_argv, c_env, c_cwd, fds, count);
  caml_leave_blocking_section();
  caml_stat_free(c_prog);
  free_strings(c_argv);
  free_strings(c_env);
  if (c_cwd != NULL) caml_stat_free(c_cwd);
  if (err != 0) caml_unix_error(err, "posix_spawn", prog);
  CAMLreturn(Val_int(pid));
}

/* A descriptor that epoll reports readable once [pid] has exited
   (Linux >= 5.3), close-on-exec. Raises Unix_error ENOSYS on older
   kernels. */
value braid_io_pidfd_open(value pid) {
#ifdef SYS_pidfd_open
  long fd = syscall(SYS_pidfd_open, (pid_t)Int_val(pid), 0);
  if (fd < 0) caml_uerror("pidfd_open", Nothing);
  return Val_int(fd);
#else
  (void)pid;
  caml_unix_error(ENOSYS, "pidfd_open", Nothing);
#endif
}
