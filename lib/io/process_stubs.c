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
   child's descriptors 0, 1 and 2: a descriptor to duplicate (>= 0) or one
   of these. */
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
static int spawn(pid_t *pid, const char *prog, char **argv, char **envp,
                 const char *cwd, const int stdio[3]) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  int moved[3] = {-1, -1, -1};
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
  /* A source among 0, 1 and 2 that is not its own target would be
     overwritten by an earlier dup2 (stdout given the parent's stdin while
     stdin is a pipe, say): give it a number above 2 first. It is
     close-on-exec, like every descriptor but the child's 0, 1 and 2. */
  for (int i = 0; i < 3 && err == 0; i++) {
    if (stdio[i] >= 0 && stdio[i] < 3 && stdio[i] != i) {
      moved[i] = fcntl(stdio[i], F_DUPFD_CLOEXEC, 3);
      if (moved[i] < 0) err = errno;
    }
  }
  for (int i = 0; i < 3 && err == 0; i++) {
    int source = moved[i] >= 0 ? moved[i] : stdio[i];
    if (source == STDIO_NULL)
      err = posix_spawn_file_actions_addopen(&actions, i, "/dev/null",
                                             i == 0 ? O_RDONLY : O_WRONLY, 0);
    else if (source >= 0)
      /* With source = i, glibc (>= 2.29) clears close-on-exec instead. */
      err = posix_spawn_file_actions_adddup2(&actions, source, i);
  }
  if (err == 0 && cwd != NULL)
    err = posix_spawn_file_actions_addchdir_np(&actions, cwd);
  if (err == 0)
    /* Looks [prog] up in this process's PATH unless it has a slash. */
    err = posix_spawnp(pid, prog, &actions, &attr, argv,
                       envp != NULL ? envp : environ);
  for (int i = 0; i < 3; i++)
    if (moved[i] >= 0) close(moved[i]);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  return err;
}

/* [stdio] is a child_fd array of 3; [env] and [cwd] are options. The OCaml
   side has checked that no string holds a NUL byte. */
value braid_io_process_spawn(value prog, value argv, value env, value cwd,
                             value stdio) {
  CAMLparam5(prog, argv, env, cwd, stdio);
  int fds[3];
  for (int i = 0; i < 3; i++) fds[i] = child_fd(Field(stdio, i));
  char *c_prog = caml_stat_strdup(String_val(prog));
  char **c_argv = copy_strings(argv);
  char **c_env = Is_some(env) ? copy_strings(Some_val(env)) : NULL;
  char *c_cwd = Is_some(cwd) ? caml_stat_strdup(String_val(Some_val(cwd)))
                             : NULL;
  pid_t pid = -1;
  caml_enter_blocking_section();
  int err = spawn(&pid, c_prog, c_argv, c_env, c_cwd, fds);
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
