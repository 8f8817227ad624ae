/* Braid IO: an io_uring instance used as the loop's readiness poller (see
   uring_poller.ml). Thin stubs over liburing: liburing owns the ring's
   memory protocol (mmap of the SQ and CQ rings, the acquire/release order
   on their heads and tails, the feature-dependent layouts, timeouts passed
   as an extended argument rather than a timeout SQE) and is kept in step
   with the kernel by its maintainers; raw syscalls would mean writing that
   barrier-sensitive code again here. What OCaml sees is four calls: create,
   queue a multishot poll, remove one, and submit-then-wait.

   The ring lives in malloc'd memory behind a custom block, so it never
   moves while the runtime lock is released. */

#define _GNU_SOURCE
#define CAML_NAME_SPACE
#include <caml/alloc.h>
#include <caml/custom.h>
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>
#include <caml/signals.h>
#include <caml/unixsupport.h>

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* The OCaml side speaks epoll's flags (epoll.ml), which are poll(2)'s. */
_Static_assert(POLLIN == 0x001, "POLLIN");
_Static_assert(POLLOUT == 0x004, "POLLOUT");
_Static_assert(POLLERR == 0x008, "POLLERR");
_Static_assert(POLLHUP == 0x010, "POLLHUP");
_Static_assert(POLLRDHUP == 0x2000, "POLLRDHUP");

/* Without IORING_POLL_ADD_LEVEL a multishot poll is edge-triggered, as the
   loop's epoll registration is; EPOLLET itself is not a poll mask bit. */
#define POLL_MASK_BITS (POLLIN | POLLOUT | POLLERR | POLLHUP | POLLRDHUP)

/* Epoll always watches for errors and hang-ups; a ring's poll only for what
   it is asked. A wake-up that reports only those (a pipe's last writer
   closing, an ICMP error on a UDP socket) was otherwise lost: the reader
   waited for ever. */
#define ALWAYS_REPORTED (POLLERR | POLLHUP)

/* The bytes of one completion-based operation (uring_ops.ml): the kernel
   reads or fills them after the submitting call has returned, so they
   cannot be an OCaml [bytes], which the collector may move. One buffer per
   operation slot, kept across operations (slots are reused last-freed
   first) and only ever grown while its slot is free. */
struct op_buffer {
  char *data;
  size_t capacity;
};

struct ring {
  struct io_uring ring;
  int open;
  struct op_buffer *buffers; /* By slot. */
  size_t nbuffers;
};

#define Ring_val(v) (*((struct ring **)Data_custom_val(v)))

/* Only once the ring is gone: its exit cancels and waits for what is in
   flight, which may still write into these. */
static void free_buffers(struct ring *r) {
  for (size_t i = 0; i < r->nbuffers; i++) free(r->buffers[i].data);
  free(r->buffers);
  r->buffers = NULL;
  r->nbuffers = 0;
}

static void finalize_ring(value v) {
  struct ring *r = Ring_val(v);
  if (r != NULL) {
    if (r->open) io_uring_queue_exit(&r->ring);
    free_buffers(r);
    free(r);
  }
}

static struct custom_operations ring_ops = {
    "braid.io.uring",           finalize_ring,
    custom_compare_default,     custom_hash_default,
    custom_serialize_default,   custom_deserialize_default,
    custom_compare_ext_default, custom_fixed_length_default};

static struct ring *open_ring(value v, const char *op) {
  struct ring *r = Ring_val(v);
  if (!r->open) caml_unix_error(EBADF, (char *)op, Nothing);
  return r;
}

/* SINGLE_ISSUER: only the loop's thread submits. How a poll's wake-up
   becomes a completion ("task work", run on the loop's thread) is the
   backend's main cost over epoll. COOP_TASKRUN (5.19) runs it at the exit
   of any system call of the loop's thread (every read and send) rather
   than through an interrupt of the running thread; TASKRUN_FLAG tells
   liburing's peek that work is pending, so a look for completions enters
   the kernel only then. Older kernels refuse these flags (EINVAL): the ring
   is then made without them. DEFER_TASKRUN (6.1: the work batched until
   the loop asks for completions) is not tried yet (docs/io.md, Backends). */
value braid_io_uring_create(value entries, value defer) {
  CAMLparam2(entries, defer);
  CAMLlocal1(v);
  struct ring *r = calloc(1, sizeof *r);
  if (r == NULL) caml_raise_out_of_memory();
  /* With [defer] (BRAID_IO_URING_DEFER=1, to measure it), DEFER_TASKRUN is
     tried first: task work waits until the loop asks for completions
     (io_uring_enter with GETEVENTS, which every wait, and a look that finds
     TASKRUN_FLAG set, makes), rather than running at the exit of any system
     call of the loop's thread. */
  static const unsigned setups[] = {
      IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
          IORING_SETUP_TASKRUN_FLAG,
      IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN |
          IORING_SETUP_TASKRUN_FLAG,
      0};
  struct io_uring_params params;
  int err = -EINVAL;
  for (size_t i = Bool_val(defer) ? 0 : 1;
       err == -EINVAL && i < sizeof setups / sizeof *setups; i++) {
    memset(&params, 0, sizeof params);
    params.flags = setups[i];
    err = io_uring_queue_init_params(Int_val(entries), &r->ring, &params);
  }
  if (err < 0) {
    free(r);
    caml_unix_error(-err, "io_uring_setup", Nothing);
  }
  /* The loop's timeouts must not need a timeout SQE (5.11's EXT_ARG), and
     a completion must never be dropped when the CQ is full (5.5's NODROP). */
  if (!(params.features & IORING_FEAT_EXT_ARG) ||
      !(params.features & IORING_FEAT_NODROP)) {
    io_uring_queue_exit(&r->ring);
    free(r);
    caml_unix_error(ENOSYS, "io_uring_setup", Nothing);
  }
  r->open = 1;
  v = caml_alloc_custom(&ring_ops, sizeof(struct ring *), 0, 1);
  Ring_val(v) = r;
  CAMLreturn(v);
}

value braid_io_uring_close(value v) {
  struct ring *r = Ring_val(v);
  if (r->open) {
    r->open = 0;
    io_uring_queue_exit(&r->ring);
    free_buffers(r);
  }
  return Val_unit;
}

/* A free SQE, submitting what is queued first if the SQ is full. */
static struct io_uring_sqe *take_sqe(struct io_uring *ring, const char *op) {
  struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
  while (sqe == NULL) {
    int r = io_uring_submit(ring);
    if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
      caml_unix_error(-r, (char *)op, Nothing);
    sqe = io_uring_get_sqe(ring);
  }
  return sqe;
}

/* Queued, not submitted: the loop's next [wait] submits the registrations
   of a whole turn in the one system call it makes anyway. */
value braid_io_uring_poll_add(value v, value fd, value mask, value user_data) {
  struct ring *r = open_ring(v, "io_uring poll_add");
  struct io_uring_sqe *sqe = take_sqe(&r->ring, "io_uring poll_add");
  io_uring_prep_poll_multishot(
      sqe, Int_val(fd),
      ((unsigned)Long_val(mask) & POLL_MASK_BITS) | ALWAYS_REPORTED);
  io_uring_sqe_set_data64(sqe, (__u64)Long_val(user_data));
  return Val_unit;
}

/* Submitted at once, with the task work it causes run before returning: a
   poll holds a reference to its file, so until the poll has ended, closing
   the descriptor would not close the socket (no FIN to the peer, no EPIPE
   to a writer on the other end) until the loop's next wait. One system
   call per close, as epoll_ctl(DEL) is. The removal's own completion is
   skipped when it succeeds; the poll it removes completes with -ECANCELED,
   under the poll's user data, which the OCaml side no longer recognises. A
   failed removal (-ENOENT: the poll had already ended) completes under
   [removal_data]. */
static void submit_and_run_task_work(struct io_uring *ring) {
  int err;
  do err = io_uring_submit_and_get_events(ring);
  while (err == -EINTR);
  if (err < 0 && err != -EAGAIN && err != -EBUSY)
    caml_unix_error(-err, "io_uring_enter", Nothing);
}

value braid_io_uring_poll_remove(value v, value user_data,
                                 value removal_data) {
  struct ring *r = open_ring(v, "io_uring poll_remove");
  /* A poll found ready as it is armed finishes arming in task work; a
     removal submitted with it, before that work ran, found nothing
     (-ENOENT), and the poll lived on with its file (a pipe's reader never
     saw its end of stream). So what is queued (this descriptor's
     registration, if the loop has not waited since) goes first. */
  if (io_uring_sq_ready(&r->ring) > 0) submit_and_run_task_work(&r->ring);
  struct io_uring_sqe *sqe = take_sqe(&r->ring, "io_uring poll_remove");
  io_uring_prep_poll_remove(sqe, (__u64)Long_val(user_data));
  io_uring_sqe_set_data64(sqe, (__u64)Long_val(removal_data));
  sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
  submit_and_run_task_work(&r->ring);
  return Val_unit;
}

/* Submits what is queued, waits for a completion if [timeout_ms] is not 0
   (-1: no limit), and copies up to a third of [buffer]'s length completions
   into it as (user data, result, more) triples: [more] is 1 while a
   multishot request stays armed. A zero timeout with nothing queued makes
   no system call unless the kernel has completions to post
   (TASKRUN_FLAG). EINTR and the timeout's ETIME are zero completions. The
   runtime lock is released only for a wait that may block; the copy into
   [buffer] stores immediates, so it needs no write barrier. */
value braid_io_uring_wait(value v, value buffer, value timeout_ms) {
  CAMLparam2(v, buffer);
  struct ring *r = open_ring(v, "io_uring_enter");
  struct io_uring *ring = &r->ring;
  long timeout = Long_val(timeout_ms);
  int capacity = (int)(Wosize_val(buffer) / 3);
  int err = 0;
  if (timeout == 0) {
    /* GETEVENTS too: under DEFER_TASKRUN the completions of what was
       queued before are posted only then. */
    if (io_uring_sq_ready(ring) > 0) err = io_uring_submit_and_get_events(ring);
  } else {
    struct io_uring_cqe *cqe;
    struct __kernel_timespec ts;
    ts.tv_sec = timeout / 1000;
    ts.tv_nsec = (timeout % 1000) * 1000000;
    caml_enter_blocking_section();
    err = io_uring_submit_and_wait_timeout(ring, &cqe, 1,
                                           timeout < 0 ? NULL : &ts, NULL);
    caml_leave_blocking_section();
  }
  if (err < 0 && err != -EINTR && err != -ETIME && err != -EAGAIN &&
      err != -EBUSY)
    caml_unix_error(-err, "io_uring_enter", Nothing);
  int n = 0;
  struct io_uring_cqe *cqe;
  while (n < capacity && io_uring_peek_cqe(ring, &cqe) == 0) {
    Field(buffer, 3 * n) = Val_long((intnat)cqe->user_data);
    Field(buffer, 3 * n + 1) = Val_long(cqe->res);
    Field(buffer, 3 * n + 2) = Val_bool(cqe->flags & IORING_CQE_F_MORE);
    io_uring_cqe_seen(ring, cqe);
    n++;
  }
  CAMLreturn(Val_int(n));
}

/* Completion-based operations (uring_ops.ml). Each is queued, not
   submitted: the loop's next wait submits the whole turn's in one
   io_uring_enter. Its completion comes under [user_data]. */

/* Slot [slot]'s buffer, at least [len] bytes. */
static char *op_buffer(struct ring *r, long slot, size_t len) {
  if ((size_t)slot >= r->nbuffers) {
    size_t n = r->nbuffers > 0 ? r->nbuffers : 64;
    while (n <= (size_t)slot) n *= 2;
    struct op_buffer *b = realloc(r->buffers, n * sizeof *b);
    if (b == NULL) caml_raise_out_of_memory();
    memset(b + r->nbuffers, 0, (n - r->nbuffers) * sizeof *b);
    r->buffers = b;
    r->nbuffers = n;
  }
  struct op_buffer *b = &r->buffers[slot];
  if (b->capacity < len) {
    /* Not realloc: the old bytes are not needed, only the room. */
    size_t capacity = len < 4096 ? 4096 : len;
    char *data = malloc(capacity);
    if (data == NULL) caml_raise_out_of_memory();
    free(b->data);
    b->data = data;
    b->capacity = capacity;
  }
  return b->data;
}

value braid_io_uring_recv(value v, value fd, value slot, value len,
                          value user_data) {
  struct ring *r = open_ring(v, "io_uring recv");
  size_t n = Long_val(len);
  char *data = op_buffer(r, Long_val(slot), n);
  struct io_uring_sqe *sqe = take_sqe(&r->ring, "io_uring recv");
  io_uring_prep_recv(sqe, Int_val(fd), data, n, 0);
  io_uring_sqe_set_data64(sqe, (__u64)Long_val(user_data));
  return Val_unit;
}

/* [len] bytes of [buf] from [off] (checked by the caller) copied to slot
   [slot]'s buffer at [pos], which keeps its first [pos] bytes: the bytes a
   socket's next send will carry (uring_ops.ml), gathered while the send
   before it is in flight. The caller's [bytes] may move or be reused as
   soon as this returns. */
value braid_io_uring_append(value v, value slot, value pos, value buf,
                            value off, value len) {
  struct ring *r = open_ring(v, "io_uring send");
  size_t at = Long_val(pos), n = Long_val(len);
  if (at == 0) {
    char *data = op_buffer(r, Long_val(slot), n);
    memcpy(data, Bytes_val(buf) + Long_val(off), n);
    return Val_unit;
  }
  op_buffer(r, Long_val(slot), 0);
  struct op_buffer *b = &r->buffers[Long_val(slot)];
  if (b->capacity < at + n) {
    size_t capacity = b->capacity < 4096 ? 4096 : b->capacity;
    while (capacity < at + n) capacity *= 2;
    char *data = realloc(b->data, capacity);
    if (data == NULL) caml_raise_out_of_memory();
    b->data = data;
    b->capacity = capacity;
  }
  memcpy(b->data + at, Bytes_val(buf) + Long_val(off), n);
  return Val_unit;
}

value braid_io_uring_append_bytecode(value *argv, int argn) {
  (void)argn;
  return braid_io_uring_append(argv[0], argv[1], argv[2], argv[3], argv[4],
                               argv[5]);
}

/* Queues the send of [len] bytes of slot [slot]'s buffer from [from]
   (filled by braid_io_uring_append). MSG_NOSIGNAL as Syscall.send. */
value braid_io_uring_send(value v, value fd, value slot, value from,
                          value len, value more, value user_data) {
  struct ring *r = open_ring(v, "io_uring send");
  size_t s = Long_val(slot);
  if (s >= r->nbuffers || r->buffers[s].data == NULL)
    caml_invalid_argument("io_uring send: empty slot");
  char *data = r->buffers[s].data + Long_val(from);
  struct io_uring_sqe *sqe = take_sqe(&r->ring, "io_uring send");
  io_uring_prep_send(sqe, Int_val(fd), data, Long_val(len),
                     MSG_NOSIGNAL | (Bool_val(more) ? MSG_MORE : 0));
  io_uring_sqe_set_data64(sqe, (__u64)Long_val(user_data));
  return Val_unit;
}

value braid_io_uring_send_bytecode(value *argv, int argn) {
  (void)argn;
  return braid_io_uring_send(argv[0], argv[1], argv[2], argv[3], argv[4],
                             argv[5], argv[6]);
}

/* [len] bytes of slot [slot]'s buffer from [from] into [buf] at [off]; the
   caller checked the bounds. Allocates nothing, raises nothing. */
value braid_io_uring_copy_out(value v, value slot, value from, value buf,
                              value off, value len) {
  struct ring *r = Ring_val(v);
  size_t s = Long_val(slot);
  if (s < r->nbuffers && r->buffers[s].data != NULL)
    memcpy(Bytes_val(buf) + Long_val(off), r->buffers[s].data + Long_val(from),
           Long_val(len));
  return Val_unit;
}

value braid_io_uring_copy_out_bytecode(value *argv, int argn) {
  (void)argn;
  return braid_io_uring_copy_out(argv[0], argv[1], argv[2], argv[3], argv[4],
                                 argv[5]);
}

/* Cancels the operation under [target]; its own completion is skipped
   when it succeeds, and comes under [own] (which names nothing) when the
   operation had already finished. */
value braid_io_uring_cancel(value v, value target, value own) {
  struct ring *r = open_ring(v, "io_uring cancel");
  struct io_uring_sqe *sqe = take_sqe(&r->ring, "io_uring cancel");
  io_uring_prep_cancel64(sqe, (__u64)Long_val(target), 0);
  io_uring_sqe_set_data64(sqe, (__u64)Long_val(own));
  sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
  return Val_unit;
}

/* Cancels every operation on [fd] (5.19), before the descriptor is closed:
   a pending receive holds the socket's file, so closing the descriptor
   alone would neither end it nor close the socket. */
value braid_io_uring_cancel_fd(value v, value fd, value own) {
  struct ring *r = open_ring(v, "io_uring cancel");
  struct io_uring_sqe *sqe = take_sqe(&r->ring, "io_uring cancel");
  io_uring_prep_cancel_fd(sqe, Int_val(fd), IORING_ASYNC_CANCEL_ALL);
  io_uring_sqe_set_data64(sqe, (__u64)Long_val(own));
  sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
  return Val_unit;
}

value braid_io_uring_ecanceled(value unit) {
  (void)unit;
  return Val_int(ECANCELED);
}

/* Raises Unix.Unix_error for a completion's negative result. */
value braid_io_uring_fail(value error, value op) {
  caml_unix_error(Int_val(error), (char *)String_val(op), Nothing);
  return Val_unit;
}

value braid_io_uring_submit(value v) {
  struct ring *r = open_ring(v, "io_uring_enter");
  submit_and_run_task_work(&r->ring);
  return Val_unit;
}
