/* What Braid needs from OpenSSL that the ocaml-ssl binding (0.7) lacks:
   server-side SNI (choosing a certificate by the name the client asks
   for), an ALPN choice made without calling back into OCaml during the
   handshake, the options a server wants (no renegotiation, no
   compression, buffers released while idle, reading ahead),
   [SSL_has_pending], the server
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

CAMLprim value braid_tls_pending(value socket) {
  return Val_int(SSL_pending(live_ssl(socket)));
}

CAMLprim value braid_tls_has_pending(value socket) {
  return Val_bool(SSL_has_pending(live_ssl(socket)));
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
