/* Braid IO: signal delivery to event loops.

   A C handler (not an OCaml one) counts each delivery and writes to one
   process-wide eventfd that every interested loop watches, edge-triggered.
   An OCaml handler would only run at a safepoint of some domain, and if the
   thread that took the signal is parked in a blocking call (a condition
   wait, say) while the loop sleeps in epoll_wait, nobody would run it. The
   write happens in the signal context itself, so the loop always wakes.

   The eventfd is created once and never closed: the handler may read its
   number at any moment, and a closed-then-reused number would send our
   8 bytes to an unrelated file. Loops never drain it (an edge is reported
   for each write; draining could hide an edge from another loop).

   SA_ONSTACK, as the runtime's own handlers: OCaml code runs on small fiber
   stacks, and the kernel's signal frame (kilobytes with the vector state)
   pushed there would overwrite the memory below. The runtime gives every
   thread it starts an alternate signal stack. */

#define _GNU_SOURCE
#define CAML_NAME_SPACE
#include <caml/fail.h>
#include <caml/mlvalues.h>
#include <caml/signals.h>
#include <caml/unixsupport.h>

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Exported by the runtime, but declared only under CAML_INTERNALS: maps
   OCaml's negative signal numbers (Sys.sighup) to the system's. */
extern int caml_convert_signal_number(int);

static atomic_int wake_fd = -1;
static atomic_ulong delivered[NSIG];
static struct sigaction saved_action[NSIG];

static void braid_io_on_signal(int signo) {
  int saved_errno = errno;
  if (signo > 0 && signo < NSIG) atomic_fetch_add(&delivered[signo], 1);
  int fd = atomic_load(&wake_fd);
  if (fd >= 0) {
    uint64_t one = 1;
    ssize_t r = write(fd, &one, sizeof one);
    (void)r;
  }
  errno = saved_errno;
}

static int system_signal(value signo) {
  int s = caml_convert_signal_number(Int_val(signo));
  if (s <= 0 || s >= NSIG) caml_invalid_argument("Braid_io.Signal: bad signal");
  return s;
}

value braid_io_signal_wake_fd(value unit) {
  (void)unit;
  int fd = atomic_load(&wake_fd);
  if (fd >= 0) return Val_int(fd);
  int fresh = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fresh < 0) caml_uerror("eventfd", Nothing);
  int expected = -1;
  if (!atomic_compare_exchange_strong(&wake_fd, &expected, fresh)) {
    close(fresh);
    return Val_int(expected);
  }
  return Val_int(fresh);
}

/* The OCaml side counts subscribers per signal and calls install and
   restore under its own lock, so these never race with each other. */
value braid_io_signal_install(value signo) {
  int s = system_signal(signo);
  struct sigaction action;
  action.sa_handler = braid_io_on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART | SA_ONSTACK;
  if (sigaction(s, &action, &saved_action[s]) < 0)
    caml_uerror("sigaction", Nothing);
  return Val_unit;
}

value braid_io_signal_restore(value signo) {
  int s = system_signal(signo);
  if (sigaction(s, &saved_action[s], NULL) < 0)
    caml_uerror("sigaction", Nothing);
  return Val_unit;
}

value braid_io_signal_count(value signo) {
  return Val_long((intnat)atomic_load(&delivered[system_signal(signo)]));
}
