/* AES-256-GCM through OpenSSL libcrypto's EVP interface, for
   Braid_web.Encrypted: sealing a value and opening it again.

   Kept minimal: the OCaml side derives the key, draws the nonce and lays out
   the bytes; this file only runs the cipher. Every length is checked before
   a pointer is taken, and the cipher context is freed on every path.

   The runtime lock is kept: the values are cookies (at most a few KiB), a
   few microseconds of work. Output strings are allocated before any
   pointer into an OCaml string is taken, so a collection cannot move an
   input under the cipher. */

#include <limits.h>
#include <string.h>

#include <openssl/evp.h>

#include <caml/alloc.h>
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>

#define KEY_BYTES 32
#define NONCE_BYTES 12
#define TAG_BYTES 16

/* Inputs must fit OpenSSL's int lengths, with room for the tag. */
static int too_long(value v) {
  return caml_string_length(v) > (size_t)(INT_MAX - TAG_BYTES);
}

static void check_arguments(value v_key, value v_nonce, value v_ad,
                            value v_text) {
  if (caml_string_length(v_key) != KEY_BYTES)
    caml_invalid_argument("Encrypted: the key is not 32 bytes");
  if (caml_string_length(v_nonce) != NONCE_BYTES)
    caml_invalid_argument("Encrypted: the nonce is not 12 bytes");
  if (too_long(v_ad) || too_long(v_text))
    caml_invalid_argument("Encrypted: a value too long");
}

/* Sets the key, the nonce and the associated data on a fresh context;
   0 on failure (the caller frees the context). */
static int start(EVP_CIPHER_CTX *ctx, int encrypt, value v_key, value v_nonce,
                 value v_ad) {
  int n;
  if (EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL, encrypt) != 1)
    return 0;
  if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, NONCE_BYTES, NULL) != 1)
    return 0;
  if (EVP_CipherInit_ex(ctx, NULL, NULL, (const unsigned char *)String_val(v_key),
                        (const unsigned char *)String_val(v_nonce),
                        encrypt) != 1)
    return 0;
  if (caml_string_length(v_ad) > 0 &&
      EVP_CipherUpdate(ctx, NULL, &n, (const unsigned char *)String_val(v_ad),
                       (int)caml_string_length(v_ad)) != 1)
    return 0;
  return 1;
}

/* [seal key nonce ad plaintext] is the ciphertext followed by the 16-byte
   tag. */
CAMLprim value braid_web_aes256gcm_seal(value v_key, value v_nonce, value v_ad,
                                        value v_plain) {
  CAMLparam4(v_key, v_nonce, v_ad, v_plain);
  CAMLlocal1(v_out);
  check_arguments(v_key, v_nonce, v_ad, v_plain);
  int len = (int)caml_string_length(v_plain);
  v_out = caml_alloc_string((mlsize_t)len + TAG_BYTES);
  EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
  if (ctx == NULL)
    caml_raise_out_of_memory();
  unsigned char *out = (unsigned char *)Bytes_val(v_out);
  int n = 0, final = 0;
  int ok = start(ctx, 1, v_key, v_nonce, v_ad) &&
           EVP_CipherUpdate(ctx, out, &n,
                            (const unsigned char *)String_val(v_plain),
                            len) == 1 &&
           EVP_CipherFinal_ex(ctx, out + n, &final) == 1 && n + final == len &&
           EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG_BYTES,
                               out + len) == 1;
  EVP_CIPHER_CTX_free(ctx);
  if (!ok)
    caml_failwith("Encrypted: AES-256-GCM encryption failed");
  CAMLreturn(v_out);
}

/* [open_ key nonce ad sealed] is [Some plaintext] if the tag at the end of
   [sealed] authenticates it and [ad] under [key], else [None]. */
CAMLprim value braid_web_aes256gcm_open(value v_key, value v_nonce, value v_ad,
                                        value v_sealed) {
  CAMLparam4(v_key, v_nonce, v_ad, v_sealed);
  CAMLlocal1(v_out);
  check_arguments(v_key, v_nonce, v_ad, v_sealed);
  if (caml_string_length(v_sealed) < TAG_BYTES)
    CAMLreturn(Val_none);
  int len = (int)caml_string_length(v_sealed) - TAG_BYTES;
  v_out = caml_alloc_string((mlsize_t)len);
  EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
  if (ctx == NULL)
    caml_raise_out_of_memory();
  unsigned char *out = (unsigned char *)Bytes_val(v_out);
  const unsigned char *sealed = (const unsigned char *)String_val(v_sealed);
  unsigned char tag[TAG_BYTES];
  memcpy(tag, sealed + len, TAG_BYTES);
  int n = 0, final = 0;
  /* The final step checks the tag: only then is the plaintext released. */
  int ok = start(ctx, 0, v_key, v_nonce, v_ad) &&
           EVP_CipherUpdate(ctx, out, &n, sealed, len) == 1 &&
           EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG_BYTES, tag) ==
               1 &&
           EVP_CipherFinal_ex(ctx, out + n, &final) == 1 && n + final == len;
  EVP_CIPHER_CTX_free(ctx);
  if (!ok) {
    /* Unauthenticated bytes are not left lying in the heap. */
    memset(out, 0, (size_t)len);
    CAMLreturn(Val_none);
  }
  CAMLreturn(caml_alloc_some(v_out));
}
