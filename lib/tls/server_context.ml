type certificate = { chain : string; key : string }

type t = {
  default : Ssl.context;
      (* The other certificates' contexts are referenced (and counted) by
         OpenSSL, from the default's: see tls_stubs.c. *)
  certificates : certificate list;
}

external configure_server : Ssl.context -> bool -> unit
  = "braid_tls_configure_server"

external set_alternatives : Ssl.context -> Ssl.context array -> unit
  = "braid_tls_set_alternatives"

external take_errors : unit -> string = "braid_tls_take_errors"

let default_ciphers =
  "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

let readable path =
  match Unix.access path [ Unix.R_OK ] with
  | () -> Ok ()
  | exception Unix.Unix_error (error, _, _) ->
      Error (Printf.sprintf "%s: %s" path (Unix.error_message error))

let ( let* ) = Result.bind

(* The binding reports some failures with an empty message: the reason is
   then in OpenSSL's error queue. *)
let reason given =
  let queued = take_errors () in
  if given <> "" then given else if queued <> "" then queued else "invalid"

let context ~ciphers ~http2 { chain; key } =
  let* () = readable chain in
  let* () = readable key in
  let ctx = Ssl.create_context Version.flexible Server_context in
  match
    Ssl.set_min_protocol_version ctx TLSv1_2;
    Ssl.set_max_protocol_version ctx TLSv1_3;
    configure_server ctx http2;
    Ssl.set_cipher_list ctx ciphers;
    Ssl.use_certificate ctx chain key
  with
  | () -> Ok ctx
  | exception Ssl.Certificate_error message ->
      Error
        (Printf.sprintf "%s: not a usable certificate: %s" chain
           (reason message))
  | exception Ssl.Private_key_error message ->
      Error
        (Printf.sprintf "%s: not a usable private key: %s" key (reason message))
  | exception Ssl.Unmatching_keys ->
      ignore (take_errors ());
      Error (Printf.sprintf "%s does not match the certificate in %s" key chain)
  | exception Ssl.Cipher_error ->
      ignore (take_errors ());
      Error (Printf.sprintf "no usable cipher in %S" ciphers)

let load ?(ciphers = default_ciphers) ?(http2 = false) certificates =
  (* Idempotent, and cheap after the first call. *)
  Ssl.init ();
  match certificates with
  | [] -> Error "no certificate"
  | first :: others ->
      let* default = context ~ciphers ~http2 first in
      let* alternatives =
        List.fold_left
          (fun acc c ->
            let* acc = acc in
            let* ctx = context ~ciphers ~http2 c in
            Ok (ctx :: acc))
          (Ok []) others
      in
      let alternatives = List.rev alternatives in
      if alternatives <> [] then
        set_alternatives default (Array.of_list alternatives);
      Ok { default; certificates }

let certificates t = t.certificates
let default t = t.default
