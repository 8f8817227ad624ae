/* Argon2id through OpenSSL 3.2+'s EVP_KDF "ARGON2ID", and salts from
   RAND_bytes. See password.mli for the contract. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <caml/alloc.h>
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>
#include <caml/signals.h>

/* The inputs are copied out of the OCaml heap so that the runtime lock can
   be released for the tens of milliseconds the derivation takes: other
   threads of this domain (a Blocking pool's) run meanwhile. */
static char *copy(value s) {
  size_t n = caml_string_length(s);
  char *p = malloc(n + 1); /* +1: malloc(0) may return NULL. */
  if (p != NULL)
    memcpy(p, String_val(s), n);
  return p;
}

/* argon2id(password, salt, secret, ad, (m, t, p), length) */
CAMLprim value braid_tls_argon2id(value v_pass, value v_salt, value v_secret,
                                  value v_ad, value v_params, value v_len) {
  CAMLparam5(v_pass, v_salt, v_secret, v_ad, v_params);
  CAMLxparam1(v_len);
  CAMLlocal1(v_out);
  size_t pass_len = caml_string_length(v_pass);
  size_t salt_len = caml_string_length(v_salt);
  size_t secret_len = caml_string_length(v_secret);
  size_t ad_len = caml_string_length(v_ad);
  uint32_t memcost = (uint32_t)Long_val(Field(v_params, 0));
  uint32_t iter = (uint32_t)Long_val(Field(v_params, 1));
  uint32_t lanes = (uint32_t)Long_val(Field(v_params, 2));
  /* One thread: OpenSSL refuses more unless the application called
     OSSL_set_max_threads, and a server hashing passwords wants one core
     per request, not p of them. The lanes are computed in turn. */
  uint32_t threads = 1;
  size_t out_len = (size_t)Long_val(v_len);
  char *pass = copy(v_pass), *salt = copy(v_salt), *secret = copy(v_secret),
       *ad = copy(v_ad);
  unsigned char *out = malloc(out_len + 1);
  int ok = 0;
  if (pass && salt && secret && ad && out) {
    caml_enter_blocking_section();
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "ARGON2ID", NULL);
    EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    if (ctx) {
      OSSL_PARAM params[9], *p = params;
      *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PASSWORD, pass,
                                               pass_len);
      *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, salt,
                                               salt_len);
      if (secret_len > 0)
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SECRET,
                                                 secret, secret_len);
      if (ad_len > 0)
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_ARGON2_AD, ad,
                                                 ad_len);
      *p++ = OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_ITER, &iter);
      *p++ = OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_ARGON2_LANES, &lanes);
      *p++ =
          OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_ARGON2_MEMCOST, &memcost);
      *p++ = OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_THREADS, &threads);
      *p = OSSL_PARAM_construct_end();
      ok = EVP_KDF_derive(ctx, out, out_len, params) == 1;
    }
    EVP_KDF_CTX_free(ctx);
    EVP_KDF_free(kdf);
    caml_leave_blocking_section();
  }
  OPENSSL_cleanse(pass, pass_len);
  free(pass);
  free(salt);
  OPENSSL_cleanse(secret, secret_len);
  free(secret);
  free(ad);
  if (ok) {
    v_out = caml_alloc_initialized_string(out_len, (char *)out);
  }
  if (out != NULL) {
    OPENSSL_cleanse(out, out_len);
    free(out);
  }
  if (!ok)
    caml_failwith("Password: OpenSSL's ARGON2ID KDF failed");
  CAMLreturn(v_out);
}

CAMLprim value braid_tls_argon2id_bytecode(value *argv, int argn) {
  (void)argn;
  return braid_tls_argon2id(argv[0], argv[1], argv[2], argv[3], argv[4],
                            argv[5]);
}

CAMLprim value braid_tls_rand_bytes(value v_len) {
  CAMLparam1(v_len);
  CAMLlocal1(v_out);
  intnat len = Long_val(v_len);
  v_out = caml_alloc_string(len);
  if (RAND_bytes((unsigned char *)Bytes_val(v_out), (int)len) != 1)
    caml_failwith("Password: RAND_bytes failed");
  CAMLreturn(v_out);
}
