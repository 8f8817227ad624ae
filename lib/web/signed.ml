(* HMAC (RFC 2104) over SHA-256, whose block is 64 bytes. *)
let block = 64

let hmac_sha256 ~key message =
  let key =
    if String.length key > block then Sha256.to_bin (Sha256.string key) else key
  in
  let pad c =
    String.init block (fun i ->
        let k = if i < String.length key then Char.code key.[i] else 0 in
        Char.chr (k lxor c))
  in
  let hash parts =
    let ctx = Sha256.init () in
    List.iter (Sha256.update_string ctx) parts;
    Sha256.to_bin (Sha256.finalize ctx)
  in
  hash [ pad 0x5c; hash [ pad 0x36; message ] ]

type keys = string list

let keys = function
  | [] -> invalid_arg "Signed.keys: no key"
  | l ->
      if List.exists (fun k -> String.length k < 32) l then
        invalid_arg "Signed.keys: a key is shorter than 32 bytes";
      l

(* What the MAC covers: a fixed label (so that these MACs mean nothing to
   another use of the same key), the name, and the value. The name is
   length-prefixed so that no (name, value) pair can be read as another. *)
let message ~name value =
  Printf.sprintf "braid-signed-v1\x00%d:%s%s" (String.length name) name value

let b64 = Base64.encode_string ~pad:false ~alphabet:Base64.uri_safe_alphabet

(* Canonical only: what decodes must encode back to the same text. Base64
   leaves spare bits in its last character, so without this several texts
   decode to one MAC, and a changed character may verify. *)
let unb64 s =
  match Base64.decode ~pad:false ~alphabet:Base64.uri_safe_alphabet s with
  | Ok d when String.equal (b64 d) s -> Some d
  | _ -> None

let sign keys ~name value =
  let key = List.hd keys in
  b64 value ^ "." ^ b64 (hmac_sha256 ~key (message ~name value))

type error = Not_signed | Tampered

let verify keys ~name signed =
  match String.index_opt signed '.' with
  | None -> Error Not_signed
  | Some i -> (
      let v = String.sub signed 0 i
      and m = String.sub signed (i + 1) (String.length signed - i - 1) in
      match (unb64 v, unb64 m) with
      | Some value, Some mac when String.length mac = 32 ->
          let msg = message ~name value in
          (* Every key is tried, whichever matches: the time says nothing of
             which key signed. *)
          let ok =
            List.fold_left
              (fun ok key -> Token.equal (hmac_sha256 ~key msg) mac || ok)
              false keys
          in
          if ok then Ok value else Error Tampered
      | _ -> Error Not_signed)
