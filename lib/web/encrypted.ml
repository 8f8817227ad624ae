external seal : string -> string -> string -> string -> string
  = "braid_web_aes256gcm_seal"

external open_ : string -> string -> string -> string -> string option
  = "braid_web_aes256gcm_open"

type keys = string list

(* The cipher's key is a PRF of the secret under a label of its own (HKDF's
   expand step with one block): the secret may then sign too (Signed uses it
   as an HMAC key over messages that start with another label). *)
let derive secret =
  Signed.hmac_sha256 ~key:secret "braid-encrypted-v1 aes-256-gcm key\x01"

let keys = function
  | [] -> invalid_arg "Encrypted.keys: no key"
  | l ->
      if List.exists (fun k -> String.length k < 32) l then
        invalid_arg "Encrypted.keys: a secret is shorter than 32 bytes";
      List.map derive l

let version = "\x01"
let nonce_bytes = 12
let tag_bytes = 16

(* The name is length-prefixed so that no name can pass for another. *)
let associated_data ~name =
  Printf.sprintf "braid-encrypted-v1\x00%d:%s" (String.length name) name

let b64 = Base64.encode_string ~pad:false ~alphabet:Base64.uri_safe_alphabet

(* Canonical only, as Signed's: one text per value. *)
let unb64 s =
  match Base64.decode ~pad:false ~alphabet:Base64.uri_safe_alphabet s with
  | Ok d when String.equal (b64 d) s -> Some d
  | _ -> None

let encrypt keys ~name value =
  let nonce = Token.random_bytes nonce_bytes in
  b64 (version ^ nonce ^ seal (List.hd keys) nonce (associated_data ~name) value)

let decrypt keys ~name text =
  match unb64 text with
  | Some raw
    when String.length raw >= 1 + nonce_bytes + tag_bytes
         && String.sub raw 0 1 = version ->
      let nonce = String.sub raw 1 nonce_bytes in
      let sealed =
        String.sub raw (1 + nonce_bytes) (String.length raw - 1 - nonce_bytes)
      in
      let ad = associated_data ~name in
      (* The tag check is OpenSSL's, in constant time; which key opened the
         value is not secret. *)
      Option.to_result ~none:Signed.Tampered
        (List.find_map (fun key -> open_ key nonce ad sealed) keys)
  | _ -> Error Signed.Not_signed
