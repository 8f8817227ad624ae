/* What Braid needs from OpenSSL that the ocaml-ssl binding (0.7) lacks:
   server-side SNI (choosing a certificate by the name the client asks
   for), an ALPN choice made without calling back into OCaml during the
   handshake, the options a server wants (no renegotiation, no
   compression, buffers released while idle, reading ahead),
   [SSL_has_pending], a server's read side that takes the bytes the
   server read first and reads handshakes in blocks, the server
   name and resumption of a connection, a prompt [SSL_free] (ocaml-ssl
   frees only when the GC finalises the socket, which lets thousands of
   closed connections' state pile up between major collections), and
   the error queue's reasons (cleared after each failure: [SSL_get_error]
   reads the thread's queue, so one connection's failure left there
   would be reported by the next connection served on the same loop).

   The binding's contexts and sockets are custom blocks holding a pointer
   ([SSL_CTX *], [SSL *]) as their data: the layout ocaml-ssl has used
   since its first release. */

#define CAML_NAME_SPACE
#include <stdio.h>
#include <string.h>
#include <pthread.h>

#include <caml/alloc.h>
#include <caml/custom.h>
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>
#include <caml/unixsupport.h>
#include <errno.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#define Ctx_val(v) (*((SSL_CTX **)Data_custom_val(v)))
#define Ssl_val(v) (*((SSL **)Data_custom_val(v)))

static SSL *live_ssl(value socket) {
  SSL *ssl = Ssl_val(socket);
  if (ssl == NULL) caml_invalid_argument("Braid_tls: connection released");
  return ssl;
}

/* {1 Server contexts} */

/* The other certificates' contexts of a default context, for SNI: held
   (reference counted) in the default context's ex_data, and released
   with it. */
struct alternatives {
  int count;
  SSL_CTX *contexts[];
};

static int alternatives_index = -1;
static pthread_once_t alternatives_once = PTHREAD_ONCE_INIT;

static void free_alternatives(void *parent, void *ptr, CRYPTO_EX_DATA *ad,
                              int idx, long argl, void *argp) {
  (void)parent; (void)ad; (void)idx; (void)argl; (void)argp;
  struct alternatives *alts = ptr;
  if (alts == NULL) return;
  for (int i = 0; i < alts->count; i++) SSL_CTX_free(alts->contexts[i]);
  OPENSSL_free(alts);
}

static void make_alternatives_index(void) {
  alternatives_index =
      SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, free_alternatives);
}

static int matches(SSL_CTX *ctx, const char *name) {
  X509 *cert = SSL_CTX_get0_certificate(ctx);
  return cert != NULL &&
         X509_check_host(cert, name, strlen(name), 0, NULL) == 1;
}

/* The default context's certificate if it names the host, else the first
   alternative that does, else the default's anyway: a client asking for
   an unknown name gets the default certificate, as with nginx. */
static int choose_certificate(SSL *ssl, int *alert, void *arg) {
  (void)alert;
  SSL_CTX *default_ctx = arg;
  const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (name == NULL || matches(default_ctx, name)) return SSL_TLSEXT_ERR_OK;
  struct alternatives *alts =
      SSL_CTX_get_ex_data(default_ctx, alternatives_index);
  if (alts == NULL) return SSL_TLSEXT_ERR_OK;
  for (int i = 0; i < alts->count; i++)
    if (matches(alts->contexts[i], name)) {
      SSL_set_SSL_CTX(ssl, alts->contexts[i]);
      break;
    }
  return SSL_TLSEXT_ERR_OK;
}

/* The server's protocols in ALPN wire format, in its order of preference.
   Two fixed lists (HTTP/2 served or not), chosen per context by the
   callback's argument: no allocation, nothing to free. A client offering
   no protocol we know gets no ALPN answer (not a failed handshake), as
   RFC 7301 allows. */
struct protocols {
  const unsigned char *wire;
  unsigned int length;
};
static const unsigned char http11[] = "\x08http/1.1";
static const unsigned char h2_http11[] = "\x02h2\x08http/1.1";
static const struct protocols http11_only = {http11, sizeof http11 - 1};
static const struct protocols h2_first = {h2_http11, sizeof h2_http11 - 1};

static int choose_protocol(SSL *ssl, const unsigned char **out,
                           unsigned char *outlen, const unsigned char *in,
                           unsigned int inlen, void *arg) {
  (void)ssl;
  const struct protocols *ours = arg;
  unsigned char *chosen;
  if (SSL_select_next_proto(&chosen, outlen, ours->wire, ours->length, in,
                            inlen) == OPENSSL_NPN_NEGOTIATED) {
    *out = chosen;
    return SSL_TLSEXT_ERR_OK;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

CAMLprim value braid_tls_configure_server(value context, value offer_h2) {
  SSL_CTX *ctx = Ctx_val(context);
  /* A peer closing without close_notify is an end of stream, not an
     error (OpenSSL 3 reports it as one otherwise): HTTP/1.1 frames its
     messages, so a truncation shows without the alert, and most clients
     never send it. */
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE |
                               SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  /* Read as much as the socket has (records and all): one read per
     request instead of one per record header and one per body. What is
     read ahead shows in SSL_has_pending, which Connection.await_input and
     pending ask before waiting on the socket. */
  SSL_CTX_set_read_ahead(ctx, 1);
  SSL_CTX_set_alpn_select_cb(
      ctx, choose_protocol,
      (void *)(Bool_val(offer_h2) ? &h2_first : &http11_only));
  return Val_unit;
}

CAMLprim value braid_tls_set_alternatives(value vdefault, value vothers) {
  SSL_CTX *default_ctx = Ctx_val(vdefault);
  mlsize_t count = Wosize_val(vothers);
  pthread_once(&alternatives_once, make_alternatives_index);
  if (alternatives_index < 0) caml_failwith("Braid_tls: no ex_data index");
  struct alternatives *alts =
      OPENSSL_malloc(sizeof *alts + count * sizeof(SSL_CTX *));
  if (alts == NULL) caml_raise_out_of_memory();
  alts->count = (int)count;
  for (mlsize_t i = 0; i < count; i++) {
    SSL_CTX *ctx = Ctx_val(Field(vothers, i));
    SSL_CTX_up_ref(ctx);
    alts->contexts[i] = ctx;
  }
  free_alternatives(NULL, SSL_CTX_get_ex_data(default_ctx, alternatives_index),
                    NULL, 0, 0, NULL);
  SSL_CTX_set_ex_data(default_ctx, alternatives_index, alts);
  SSL_CTX_set_tlsext_servername_callback(default_ctx, choose_certificate);
  SSL_CTX_set_tlsext_servername_arg(default_ctx, default_ctx);
  return Val_unit;
}

CAMLprim value braid_tls_configure_client(value context) {
  SSL_CTX_set_options(Ctx_val(context), SSL_OP_NO_RENEGOTIATION |
                                            SSL_OP_NO_COMPRESSION |
                                            SSL_OP_IGNORE_UNEXPECTED_EOF);
  return Val_unit;
}

/* {1 Connections} */

/* {2 The server's reading BIO}

   OpenSSL reads a handshake's records through its socket BIO one system
   call per record header and one per record body (read-ahead, which
   SSL_CTX_set_read_ahead asks for, applies to application data only), and
   a server that first looks at a connection's first byte (to tell TLS from
   plain HTTP) adds one more. This BIO, a server connection's read side,
   gives OpenSSL first the bytes the server read itself to make that
   decision, then reads the socket in blocks: a ClientHello is one recv, a
   client's ChangeCipherSpec and Finished (and the request often sent with
   them) another. A read asking for a block or more goes straight into
   OpenSSL's buffer, without a copy. Writes keep OpenSSL's socket BIO.

   What a block read holds beyond OpenSSL's request is kept (allocated to
   its size) and freed once drained, so that an idle connection holds
   none. Bytes in it are invisible to the
   socket's readiness: braid_tls_has_pending counts them. */

#define READER_BLOCK 4096

struct reader {
  int fd;
  int eof;             /* recv found the end of the stream */
  size_t start, end;   /* the unread bytes of [block] */
  unsigned char *block;
};

static void reader_drop_block(struct reader *r) {
  OPENSSL_free(r->block);
  r->block = NULL;
  r->start = r->end = 0;
}

/* recv with EINTR retried: the count, 0 at the end, or -1 with errno. */
static ssize_t reader_recv(struct reader *r, void *buf, size_t len) {
  ssize_t n;
  do n = recv(r->fd, buf, len, 0);
  while (n < 0 && errno == EINTR);
  if (n == 0) r->eof = 1;
  return n;
}

static int reader_read(BIO *b, char *out, int outl) {
  struct reader *r = BIO_get_data(b);
  BIO_clear_retry_flags(b);
  if (outl <= 0) return 0;
  if (r->block == NULL) {
    /* A read as large as a block goes straight into OpenSSL's buffer. A
       smaller one reads a block on the stack: nothing is allocated when
       nothing comes, and only what is left over once [out] has its share
       is kept. */
    unsigned char stack_block[READER_BLOCK];
    unsigned char *into = outl >= READER_BLOCK ? (unsigned char *)out
                                               : stack_block;
    size_t len = outl >= READER_BLOCK ? (size_t)outl : READER_BLOCK;
    ssize_t n = reader_recv(r, into, len);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      BIO_set_retry_read(b);
    if (n <= 0 || into == (unsigned char *)out) return (int)n;
    size_t mine = (size_t)n < (size_t)outl ? (size_t)n : (size_t)outl;
    memcpy(out, stack_block, mine);
    if ((size_t)n > mine) {
      r->block = OPENSSL_malloc((size_t)n - mine);
      if (r->block == NULL) return -1;
      memcpy(r->block, stack_block + mine, (size_t)n - mine);
      r->end = (size_t)n - mine;
    }
    return (int)mine;
  }
  size_t n = r->end - r->start;
  if (n > (size_t)outl) n = (size_t)outl;
  memcpy(out, r->block + r->start, n);
  r->start += n;
  if (r->start == r->end) reader_drop_block(r);
  return (int)n;
}

static long reader_ctrl(BIO *b, int cmd, long num, void *ptr) {
  (void)num;
  struct reader *r = BIO_get_data(b);
  switch (cmd) {
  case BIO_CTRL_PENDING:
    return (long)(r->end - r->start);
  case BIO_CTRL_EOF:
    return r->eof && r->block == NULL;
  case BIO_C_GET_FD:
    if (ptr != NULL) *(int *)ptr = r->fd;
    return r->fd;
  case BIO_CTRL_FLUSH:
    return 1;
  default:
    return 0;
  }
}

static int reader_destroy(BIO *b) {
  struct reader *r = BIO_get_data(b);
  if (r != NULL) {
    OPENSSL_free(r->block);
    OPENSSL_free(r);
    BIO_set_data(b, NULL);
  }
  return 1;
}

static BIO_METHOD *reader_method = NULL;
static pthread_once_t reader_once = PTHREAD_ONCE_INIT;

static void make_reader_method(void) {
  BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK |
                                   BIO_TYPE_DESCRIPTOR,
                               "braid socket reader");
  if (m == NULL) return;
  if (!BIO_meth_set_read(m, reader_read) ||
      !BIO_meth_set_ctrl(m, reader_ctrl) ||
      !BIO_meth_set_destroy(m, reader_destroy)) {
    BIO_meth_free(m);
    return;
  }
  reader_method = m;
}

/* Makes the reader [ssl]'s read side, holding a copy of the [len] bytes of
   [received] at [off] (the connection's first, read by the caller) for
   OpenSSL's first reads. The socket BIO that ocaml-ssl set stays the write
   side. */
CAMLprim value braid_tls_attach_reader(value socket, value received, value off,
                                       value len) {
  SSL *ssl = live_ssl(socket);
  size_t n = Long_val(len);
  pthread_once(&reader_once, make_reader_method);
  if (reader_method == NULL) caml_failwith("Braid_tls: no reader BIO method");
  int fd = SSL_get_wfd(ssl);
  struct reader *r = OPENSSL_zalloc(sizeof *r);
  BIO *b = BIO_new(reader_method);
  if (r == NULL || b == NULL || fd < 0) {
    OPENSSL_free(r);
    BIO_free(b);
    caml_raise_out_of_memory();
  }
  r->fd = fd;
  if (n > 0) {
    r->block = OPENSSL_malloc(n);
    if (r->block == NULL) {
      OPENSSL_free(r);
      BIO_free(b);
      caml_raise_out_of_memory();
    }
    memcpy(r->block, Bytes_val(received) + Long_val(off), n);
    r->end = n;
  }
  BIO_set_data(b, r);
  BIO_set_init(b, 1);
  SSL_set0_rbio(ssl, b);
  return Val_unit;
}

/* A non-blocking recv into [buf] that raises nothing: the count, 0 at the
   end of the stream, -1 if nothing is there yet, -2 on an error. */
CAMLprim value braid_tls_recv(value fd, value buf, value off, value len) {
  ssize_t n;
  do n = recv(Int_val(fd), Bytes_val(buf) + Long_val(off), Long_val(len), 0);
  while (n < 0 && errno == EINTR);
  if (n >= 0) return Val_long(n);
  return Val_long(errno == EAGAIN || errno == EWOULDBLOCK ? -1 : -2);
}

CAMLprim value braid_tls_pending(value socket) {
  return Val_int(SSL_pending(live_ssl(socket)));
}

CAMLprim value braid_tls_has_pending(value socket) {
  SSL *ssl = live_ssl(socket);
  return Val_bool(SSL_has_pending(ssl) || BIO_ctrl_pending(SSL_get_rbio(ssl)) > 0);
}

CAMLprim value braid_tls_session_reused(value socket) {
  return Val_bool(SSL_session_reused(live_ssl(socket)));
}

CAMLprim value braid_tls_server_name(value socket) {
  const char *name =
      SSL_get_servername(live_ssl(socket), TLSEXT_NAMETYPE_host_name);
  if (name == NULL) return Val_none;
  return caml_alloc_some(caml_copy_string(name));
}

CAMLprim value braid_tls_release(value socket) {
  SSL *ssl = Ssl_val(socket);
  Ssl_val(socket) = NULL; /* The binding's finaliser frees NULL: a no-op. */
  SSL_free(ssl);
  return Val_unit;
}

/* The reasons in the thread's error queue, oldest first, separated by
   "; ", and the queue emptied. */
CAMLprim value braid_tls_take_errors(value unit) {
  (void)unit;
  char text[512];
  size_t used = 0;
  unsigned long code;
  text[0] = '\0';
  while ((code = ERR_get_error()) != 0) {
    char one[256];
    const char *reason = ERR_reason_error_string(code);
    if (reason != NULL)
      snprintf(one, sizeof one, "%s", reason);
    else
      ERR_error_string_n(code, one, sizeof one);
    size_t len = strlen(one);
    if (used + len + 3 < sizeof text) {
      if (used > 0) {
        memcpy(text + used, "; ", 2);
        used += 2;
      }
      memcpy(text + used, one, len);
      used += len;
      text[used] = '\0';
    }
  }
  return caml_copy_string(text);
}

/* EPROTO as the Unix library represents it (its [error] type has no
   constructor for it): the error of every TLS failure. */
value braid_tls_eproto(value unit)
{
  (void)unit;
  return caml_unix_error_of_code(EPROTO);
}
