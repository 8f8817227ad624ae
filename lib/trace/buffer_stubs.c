/* The probes' writes into their domain's buffer (see batch.ml). Each is
   one noalloc call: no allocation, no poll point, so no other systhread of
   the domain and no signal handler can run in the middle of a record. That
   is also why the encoding is here and not in OCaml, where a loop writing a
   varint would poll at its back edge.

   A domain's buffer is found by the domain's index, as the runtime finds
   its ring: looking it up in OCaml's domain-local storage cost more than
   the rest of the write (measured with callgrind: 340 instructions a
   request, for about five writes). It belongs to the domain that attached
   it (its unique id) and only that domain reads or writes it; a later
   domain that reuses the index attaches it again, after the first one
   flushed it at its exit.

   Records are a kind byte, the time since the buffer's previous record (the
   first one's is the clock itself) as an unsigned LEB128 varint, then the
   kind's operands as zigzag varints, strings as a varint length and their
   bytes. The times are CLOCK_MONOTONIC in nanoseconds, the clock of the
   runtime's own events (caml_time_counter), so that the two sorts can be
   merged. */

#define CAML_INTERNALS
#include <caml/mlvalues.h>
#include <caml/domain_state.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Kept in step with batch.ml. */
#define KIND_SUSPEND 2
#define KIND_LOOP_SLEEP 13
#define CAPACITY 1016
#define MAX_INT_RECORD (1 + 10 + 3 * 10)
#define MAX_STRING 256

/* Max_domains_max of the runtime: a domain's index is below it. */
#define MAX_DOMAINS 4096

struct buffer {
  int64_t owner;          /* The unique id of the domain that attached it. */
  uint64_t fill;          /* Bytes of records. */
  uint64_t last_time;     /* The time of the last record; 0 when empty. */
  uint64_t wait_kind;     /* What the next suspension waits on (0: none) */
  uint64_t wait_detail;   /* ... its descriptor, deadline or fiber. */
  uint64_t sleep_start;   /* When the loop started its current sleep. */
  uint64_t sleep_timeout;
  unsigned char records[CAPACITY];
};

static struct buffer *buffers[MAX_DOMAINS];

/* The calling domain's buffer, if it attached one. */
static inline struct buffer *mine(void)
{
  int id = Caml_state->id;
  if (id < 0 || id >= MAX_DOMAINS) return NULL;
  struct buffer *b = buffers[id];
  if (b == NULL || b->owner != (int64_t)Caml_state->unique_id) return NULL;
  return b;
}

/* 1 when the calling domain attached its buffer now (the caller arranges
   for its flush at the domain's exit), 0 when it had it already or cannot
   have one (out of memory: its records are dropped). */
intnat braid_trace_attach(value unit)
{
  (void)unit;
  int id = Caml_state->id;
  if (id < 0 || id >= MAX_DOMAINS || mine() != NULL) return 0;
  if (buffers[id] == NULL) {
    buffers[id] = malloc(sizeof(struct buffer));
    if (buffers[id] == NULL) return 0;
  }
  memset(buffers[id], 0, sizeof(struct buffer));
  buffers[id]->owner = (int64_t)Caml_state->unique_id;
  return 1;
}

static inline uint64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline unsigned char *put_unsigned(unsigned char *p, uint64_t v)
{
  while (v >= 0x80) {
    *p++ = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  *p++ = (unsigned char)v;
  return p;
}

static inline unsigned char *put_signed(unsigned char *p, intnat v)
{
  return put_unsigned(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* The start of a record of [kind] stamped [now] in [b], if [worst] bytes
   are left; NULL otherwise (and when there is no buffer): the caller
   attaches or flushes, and writes again. */
static inline unsigned char *start(struct buffer *b, intnat kind, uint64_t now,
                                   uint64_t worst)
{
  if (b == NULL || b->fill + worst > CAPACITY) return NULL;
  unsigned char *p = b->records + b->fill;
  *p++ = (unsigned char)kind;
  /* The first record of a buffer carries the clock itself. */
  p = put_unsigned(p, now - b->last_time);
  b->last_time = now;
  return p;
}

static inline intnat finish(struct buffer *b, unsigned char *end)
{
  b->fill = end - b->records;
  return 1;
}

intnat braid_trace_put1(intnat kind, intnat a)
{
  struct buffer *b = mine();
  unsigned char *p = start(b, kind, now_ns(), MAX_INT_RECORD);
  if (p == NULL) return 0;
  return finish(b, put_signed(p, a));
}

intnat braid_trace_put2(intnat kind, intnat a, intnat x)
{
  struct buffer *b = mine();
  unsigned char *p = start(b, kind, now_ns(), MAX_INT_RECORD);
  if (p == NULL) return 0;
  p = put_signed(p, a);
  return finish(b, put_signed(p, x));
}

intnat braid_trace_put3(intnat kind, intnat a, intnat x, intnat y)
{
  struct buffer *b = mine();
  unsigned char *p = start(b, kind, now_ns(), MAX_INT_RECORD);
  if (p == NULL) return 0;
  p = put_signed(p, a);
  p = put_signed(p, x);
  return finish(b, put_signed(p, y));
}

/* The suspension takes what the last wait said, and clears it: a wait is
   for the next suspension only. Its kind is KIND_SUSPEND + the wait's. */
intnat braid_trace_suspend(intnat fiber)
{
  struct buffer *b = mine();
  if (b == NULL) return 0;
  intnat wait = (intnat)b->wait_kind;
  unsigned char *p = start(b, KIND_SUSPEND + wait, now_ns(), MAX_INT_RECORD);
  if (p == NULL) return 0;
  p = put_signed(p, fiber);
  if (wait != 0) p = put_signed(p, (intnat)b->wait_detail);
  b->wait_kind = 0;
  return finish(b, p);
}

/* Notes, not records: 0 when the domain has no buffer yet (the caller
   attaches one and notes again). */
intnat braid_trace_set_wait(intnat kind, intnat detail)
{
  struct buffer *b = mine();
  if (b == NULL) return 0;
  b->wait_kind = (uint64_t)kind;
  b->wait_detail = (uint64_t)detail;
  return 1;
}

/* A loop's sleep is one record, written when it wakes: the timeout, how
   long it slept and how many descriptors woke it. */
intnat braid_trace_sleep(intnat timeout_ms)
{
  struct buffer *b = mine();
  if (b == NULL) return 0;
  b->sleep_start = now_ns();
  b->sleep_timeout = (uint64_t)timeout_ms;
  return 1;
}

/* A wake-up without its sleep (events switched on in between) writes
   nothing. */
intnat braid_trace_woken(intnat events)
{
  struct buffer *b = mine();
  if (b != NULL && b->sleep_start == 0) return 1;
  uint64_t now = now_ns();
  unsigned char *p = start(b, KIND_LOOP_SLEEP, now, MAX_INT_RECORD);
  if (p == NULL) return 0;
  p = put_signed(p, (intnat)b->sleep_timeout);
  p = put_signed(p, (intnat)(now - b->sleep_start));
  b->sleep_start = 0;
  return finish(b, put_signed(p, events));
}

/* caml_string_length, inline (it is a function call in OCaml 5.3): the
   last byte of a string's block says how many bytes of padding it has. */
static inline uint64_t length(value s)
{
  uint64_t last = Bosize_val(s) - 1;
  return last - Byte_u(s, last);
}

static inline unsigned char *put_string(unsigned char *p, value s)
{
  uint64_t n = length(s);
  if (n > MAX_STRING) n = MAX_STRING;
  p = put_unsigned(p, n);
  memcpy(p, String_val(s), n);
  return p + n;
}

intnat braid_trace_put_strings(intnat kind, intnat a, value s1, value s2,
                               value s3)
{
  struct buffer *b = mine();
  unsigned char *p =
      start(b, kind, now_ns(), MAX_INT_RECORD + 3 * (2 + MAX_STRING));
  if (p == NULL) return 0;
  p = put_signed(p, a);
  p = put_string(p, s1);
  p = put_string(p, s2);
  return finish(b, put_string(p, s3));
}

/* The flush's copy, from inside Runtime_events' call of the custom type's
   encoder: the records move to [out] and the buffer is emptied, in one
   step that no other systhread of the domain can come between. An [out]
   too small (the flush's own, when the ring is paused) drops them. */
intnat braid_trace_take(value out)
{
  struct buffer *b = mine();
  if (b == NULL) return 0;
  uint64_t n = b->fill;
  if (n > length(out)) n = 0;
  memcpy(Bytes_val(out), b->records, n);
  b->fill = 0;
  b->last_time = 0;
  return (intnat)n;
}

intnat braid_trace_fill(value unit)
{
  (void)unit;
  struct buffer *b = mine();
  return b == NULL ? 0 : (intnat)b->fill;
}

/* Bytecode versions: tagged arguments and results. */

value braid_trace_attach_byte(value unit)
{
  return Val_long(braid_trace_attach(unit));
}

value braid_trace_put1_byte(value kind, value a)
{
  return Val_long(braid_trace_put1(Long_val(kind), Long_val(a)));
}

value braid_trace_put2_byte(value kind, value a, value x)
{
  return Val_long(braid_trace_put2(Long_val(kind), Long_val(a), Long_val(x)));
}

value braid_trace_put3_byte(value kind, value a, value x, value y)
{
  return Val_long(braid_trace_put3(Long_val(kind), Long_val(a), Long_val(x),
                                   Long_val(y)));
}

value braid_trace_suspend_byte(value fiber)
{
  return Val_long(braid_trace_suspend(Long_val(fiber)));
}

value braid_trace_set_wait_byte(value kind, value detail)
{
  return Val_long(braid_trace_set_wait(Long_val(kind), Long_val(detail)));
}

value braid_trace_sleep_byte(value timeout_ms)
{
  return Val_long(braid_trace_sleep(Long_val(timeout_ms)));
}

value braid_trace_woken_byte(value events)
{
  return Val_long(braid_trace_woken(Long_val(events)));
}

value braid_trace_put_strings_byte(value kind, value a, value s1, value s2,
                                   value s3)
{
  return Val_long(
      braid_trace_put_strings(Long_val(kind), Long_val(a), s1, s2, s3));
}

value braid_trace_take_byte(value out)
{
  return Val_long(braid_trace_take(out));
}

value braid_trace_fill_byte(value unit)
{
  return Val_long(braid_trace_fill(unit));
}
