/* A self-signed certificate for development (EC P-256, subjectAltName) made
   with OpenSSL's X509 API, which the ssl binding does not expose; and the
   two things Dev_certificate reads back from one: its notAfter and its
   names. See dev_certificate.mli for the contract. */

#include <arpa/inet.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <caml/alloc.h>
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>

static value bio_contents(BIO *bio) {
  char *data;
  long n = BIO_get_mem_data(bio, &data);
  value s = caml_alloc_string(n);
  memcpy((char *)Bytes_val(s), data, n);
  return s;
}

static int add_extension(X509 *x, X509V3_CTX *ctx, int nid, const char *v) {
  X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, v);
  int ok = ext != NULL && X509_add_ext(x, ext, -1);
  X509_EXTENSION_free(ext);
  return ok;
}

/* generate(subject_alt_name, not_before, not_after) -> (cert_pem, key_pem).
   subject_alt_name in OpenSSL's configuration syntax
   ("DNS:localhost,IP:127.0.0.1"); the times in seconds since the epoch. */
CAMLprim value braid_tls_dev_certificate_generate(value v_san, value v_before,
                                                   value v_after) {
  CAMLparam3(v_san, v_before, v_after);
  CAMLlocal3(v_cert, v_key, v_pair);
  EVP_PKEY *key = EVP_EC_gen("P-256");
  X509 *x = X509_new();
  BIGNUM *serial = BN_new();
  BIO *cert_out = BIO_new(BIO_s_mem());
  BIO *key_out = BIO_new(BIO_s_mem());
  X509V3_CTX ctx;
  int ok = key && x && serial && cert_out && key_out;
  ok = ok && X509_set_version(x, X509_VERSION_3);
  /* 127 random bits: positive, unique enough that a browser never sees two
     certificates of one issuer with one serial. */
  ok = ok && BN_rand(serial, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) &&
       BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(x)) != NULL;
  ok = ok &&
       ASN1_TIME_set(X509_getm_notBefore(x), (time_t)Double_val(v_before)) &&
       ASN1_TIME_set(X509_getm_notAfter(x), (time_t)Double_val(v_after));
  ok = ok && X509_set_pubkey(x, key);
  if (ok) {
    X509_NAME *name = X509_get_subject_name(x);
    ok = X509_NAME_add_entry_by_txt(
             name, "O", MBSTRING_ASC,
             (const unsigned char *)"Braid development", -1, -1, 0) &&
         X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                    (const unsigned char *)"localhost", -1, -1,
                                    0) &&
         X509_set_issuer_name(x, name);
  }
  if (ok) {
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    /* An end-entity certificate (browsers refuse a CA's as a server's),
       trusted as itself: openssl verify -CAfile and curl --cacert take it. */
    ok = add_extension(x, &ctx, NID_basic_constraints, "critical,CA:FALSE") &&
         add_extension(x, &ctx, NID_key_usage, "critical,digitalSignature") &&
         add_extension(x, &ctx, NID_ext_key_usage, "serverAuth") &&
         add_extension(x, &ctx, NID_subject_key_identifier, "hash") &&
         add_extension(x, &ctx, NID_subject_alt_name, String_val(v_san));
  }
  ok = ok && X509_sign(x, key, EVP_sha256()) > 0;
  ok = ok && PEM_write_bio_X509(cert_out, x) &&
       PEM_write_bio_PrivateKey(key_out, key, NULL, NULL, 0, NULL, NULL);
  if (ok) {
    v_cert = bio_contents(cert_out);
    v_key = bio_contents(key_out);
  }
  BIO_free(cert_out);
  BIO_free(key_out);
  BN_free(serial);
  X509_free(x);
  EVP_PKEY_free(key);
  if (!ok)
    caml_failwith("Dev_certificate: OpenSSL could not make the certificate");
  v_pair = caml_alloc_tuple(2);
  Store_field(v_pair, 0, v_cert);
  Store_field(v_pair, 1, v_key);
  CAMLreturn(v_pair);
}

/* inspect(cert_pem) -> Some (not_after, names) | None (not a certificate).
   Names: DNS names as written, IP addresses in inet_ntop's form. */
CAMLprim value braid_tls_dev_certificate_inspect(value v_pem) {
  CAMLparam1(v_pem);
  CAMLlocal5(v_names, v_cell, v_pair, v_some, v_text);
  BIO *in = BIO_new_mem_buf(String_val(v_pem), caml_string_length(v_pem));
  X509 *x = in ? PEM_read_bio_X509(in, NULL, NULL, NULL) : NULL;
  BIO_free(in);
  if (x == NULL)
    CAMLreturn(Val_none);
  struct tm tm;
  if (!ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm)) {
    X509_free(x);
    CAMLreturn(Val_none);
  }
  double not_after = (double)timegm(&tm);
  v_names = Val_emptylist;
  GENERAL_NAMES *names =
      X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
  for (int i = names ? sk_GENERAL_NAME_num(names) - 1 : -1; i >= 0; i--) {
    GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
    char text[INET6_ADDRSTRLEN];
    const char *s = NULL;
    int n = 0;
    if (g->type == GEN_DNS) {
      s = (const char *)ASN1_STRING_get0_data(g->d.dNSName);
      n = ASN1_STRING_length(g->d.dNSName);
    } else if (g->type == GEN_IPADD) {
      int len = ASN1_STRING_length(g->d.iPAddress);
      const unsigned char *ip = ASN1_STRING_get0_data(g->d.iPAddress);
      if ((len == 4 && inet_ntop(AF_INET, ip, text, sizeof text)) ||
          (len == 16 && inet_ntop(AF_INET6, ip, text, sizeof text))) {
        s = text;
        n = strlen(text);
      }
    }
    if (s == NULL)
      continue;
    v_text = caml_alloc_initialized_string(n, s);
    v_cell = caml_alloc(2, 0);
    Store_field(v_cell, 0, v_text);
    Store_field(v_cell, 1, v_names);
    v_names = v_cell;
  }
  GENERAL_NAMES_free(names);
  X509_free(x);
  v_pair = caml_alloc_tuple(2);
  Store_field(v_pair, 0, caml_copy_double(not_after));
  Store_field(v_pair, 1, v_names);
  v_some = caml_alloc_some(v_pair);
  CAMLreturn(v_some);
}
