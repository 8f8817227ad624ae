/* libnghttp2's HPACK deflater and inflater, for the hpack experiment: whole
   passes over a corpus run here in C, so that the figures are nghttp2's and
   not those of crossing into C once per field.

   The nghttp2_nv records point straight into the OCaml strings: nothing here
   allocates on the OCaml heap or releases the runtime, so no collection can
   move them while they are used. */

#define CAML_NAME_SPACE
#include <caml/alloc.h>
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>
#include <nghttp2/nghttp2.h>
#include <stdint.h>
#include <string.h>

#define MAX_FIELDS 64
#define OUT_SIZE 65536

static uint8_t out[OUT_SIZE];

/* A block is an OCaml array of (name, value) pairs. */
static size_t fill_nv(value block, nghttp2_nv *nva) {
  size_t n = Wosize_val(block);
  if (n > MAX_FIELDS) caml_invalid_argument("hpack bench: too many fields");
  for (size_t i = 0; i < n; i++) {
    value pair = Field(block, i);
    value name = Field(pair, 0), v = Field(pair, 1);
    nva[i].name = (uint8_t *)String_val(name);
    nva[i].namelen = caml_string_length(name);
    nva[i].value = (uint8_t *)String_val(v);
    nva[i].valuelen = caml_string_length(v);
    nva[i].flags = NGHTTP2_NV_FLAG_NONE;
  }
  return n;
}

static nghttp2_hd_deflater *new_deflater(void) {
  nghttp2_hd_deflater *d;
  if (nghttp2_hd_deflate_new(&d, 4096) != 0) caml_failwith("nghttp2_hd_deflate_new");
  return d;
}

static size_t deflate_block(nghttp2_hd_deflater *d, value block) {
  nghttp2_nv nva[MAX_FIELDS];
  size_t n = fill_nv(block, nva);
  ssize_t len = nghttp2_hd_deflate_hd(d, out, OUT_SIZE, nva, n);
  if (len < 0) caml_failwith(nghttp2_strerror((int)len));
  return (size_t)len;
}

/* [encode_pass blocks passes]: one deflater (one connection) encodes the
   blocks [passes] times over; the total encoded size. */
value braid_bench_nghttp2_encode_pass(value blocks, value passes) {
  nghttp2_hd_deflater *d = new_deflater();
  size_t total = 0, n = Wosize_val(blocks);
  for (intnat p = 0; p < Long_val(passes); p++)
    for (size_t i = 0; i < n; i++) total += deflate_block(d, Field(blocks, i));
  nghttp2_hd_deflate_del(d);
  return Val_long(total);
}

/* [encode_blocks blocks]: the field blocks one fresh deflater makes of them,
   in order. */
value braid_bench_nghttp2_encode_blocks(value blocks) {
  CAMLparam1(blocks);
  CAMLlocal2(result, s);
  size_t n = Wosize_val(blocks);
  nghttp2_hd_deflater *d = new_deflater();
  result = caml_alloc(n, 0);
  for (size_t i = 0; i < n; i++) {
    size_t len = deflate_block(d, Field(blocks, i));
    s = caml_alloc_initialized_string(len, (const char *)out);
    Store_field(result, i, s);
  }
  nghttp2_hd_deflate_del(d);
  CAMLreturn(result);
}

/* Decodes one block with [inflater]; calls [on_field] for each field unless
   it is NULL; the number of fields, or -1 if nghttp2 refused the block. */
static long inflate_block(nghttp2_hd_inflater *inflater, const uint8_t *in, size_t len,
                          void (*on_field)(void *, nghttp2_nv *), void *env) {
  long fields = 0;
  for (;;) {
    nghttp2_nv nv;
    int flags = 0;
    ssize_t used = nghttp2_hd_inflate_hd2(inflater, &nv, &flags, in, len, 1);
    if (used < 0) return -1;
    in += used;
    len -= (size_t)used;
    if (flags & NGHTTP2_HD_INFLATE_EMIT) {
      fields++;
      if (on_field != NULL) on_field(env, &nv);
    }
    if (flags & NGHTTP2_HD_INFLATE_FINAL) {
      nghttp2_hd_inflate_end_headers(inflater);
      return fields;
    }
    if (used == 0 && !(flags & NGHTTP2_HD_INFLATE_EMIT)) return -1;
  }
}

static nghttp2_hd_inflater *new_inflater(void) {
  nghttp2_hd_inflater *i;
  if (nghttp2_hd_inflate_new(&i) != 0) caml_failwith("nghttp2_hd_inflate_new");
  return i;
}

/* [decode_pass blocks passes]: [passes] times, a fresh inflater (a new
   connection: the blocks depend on the table state they were made in) decodes
   every block; the number of fields decoded. */
value braid_bench_nghttp2_decode_pass(value blocks, value passes) {
  size_t n = Wosize_val(blocks);
  long total = 0;
  for (intnat p = 0; p < Long_val(passes); p++) {
    nghttp2_hd_inflater *inflater = new_inflater();
    for (size_t i = 0; i < n; i++) {
      value b = Field(blocks, i);
      long k = inflate_block(inflater, (const uint8_t *)String_val(b), caml_string_length(b), NULL, NULL);
      if (k < 0) {
        nghttp2_hd_inflate_del(inflater);
        caml_failwith("hpack bench: nghttp2 refused a block");
      }
      total += k;
    }
    nghttp2_hd_inflate_del(inflater);
  }
  return Val_long(total);
}

/* For the check that both sides agree: each block decoded to "name: value\n"
   lines. */
struct text {
  char *buf;
  size_t len, cap;
};

static void append_field(void *env, nghttp2_nv *nv) {
  struct text *t = env;
  size_t need = nv->namelen + nv->valuelen + 3;
  if (t->len + need > t->cap) return; /* truncated text: the check then fails */
  memcpy(t->buf + t->len, nv->name, nv->namelen);
  t->len += nv->namelen;
  memcpy(t->buf + t->len, ": ", 2);
  t->len += 2;
  memcpy(t->buf + t->len, nv->value, nv->valuelen);
  t->len += nv->valuelen;
  t->buf[t->len++] = '\n';
}

value braid_bench_nghttp2_decode_to_text(value blocks) {
  CAMLparam1(blocks);
  CAMLlocal2(result, s);
  static char buf[OUT_SIZE];
  size_t n = Wosize_val(blocks);
  result = caml_alloc(n, 0);
  nghttp2_hd_inflater *inflater = new_inflater();
  for (size_t i = 0; i < n; i++) {
    struct text t = {buf, 0, sizeof buf};
    value b = Field(blocks, i);
    if (inflate_block(inflater, (const uint8_t *)String_val(b), caml_string_length(b), append_field, &t) < 0) {
      nghttp2_hd_inflate_del(inflater);
      caml_failwith("hpack bench: nghttp2 refused a block Braid encoded");
    }
    s = caml_alloc_initialized_string(t.len, buf);
    Store_field(result, i, s);
  }
  nghttp2_hd_inflate_del(inflater);
  CAMLreturn(result);
}
