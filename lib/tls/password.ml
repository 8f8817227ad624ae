type params = { memory_kib : int; iterations : int; parallelism : int }

let default = { memory_kib = 19456; iterations = 2; parallelism = 1 }

external argon2id :
  string -> string -> string -> string -> params -> int -> string
  = "braid_tls_argon2id_bytecode" "braid_tls_argon2id"

external rand_bytes : int -> string = "braid_tls_rand_bytes"

(* Ranges: RFC 9106's minimums, and maximums that a stored string cannot
   exceed to make verify allocate or loop without end. *)
let check_params { memory_kib = m; iterations = t; parallelism = p } =
  if p < 1 || p > 255 then Error "parallelism out of 1..255"
  else if t < 1 || t > 1000 then Error "iterations out of 1..1000"
  else if m < 8 * p || m > 4 * 1024 * 1024 then
    Error "memory out of 8p KiB..4 GiB"
  else Ok ()

let valid params =
  match check_params params with
  | Ok () -> ()
  | Error why -> invalid_arg ("Password: " ^ why)

let derive ?(secret = "") ?(ad = "") params ~salt ~length password =
  valid params;
  if String.length salt < 8 then invalid_arg "Password.derive: salt < 8 bytes";
  if length < 4 then invalid_arg "Password.derive: length < 4";
  argon2id password salt secret ad params length

let b64 = Base64.encode_string ~pad:false

let unb64 s =
  (* Canonical only: what decodes must encode back to the same text. *)
  match Base64.decode ~pad:false s with
  | Ok d when b64 d = s -> Some d
  | _ -> None

let hash ?(params = default) password =
  let salt = rand_bytes 16 in
  let h = derive params ~salt ~length:32 password in
  Printf.sprintf "$argon2id$v=19$m=%d,t=%d,p=%d$%s$%s" params.memory_kib
    params.iterations params.parallelism (b64 salt) (b64 h)

(* A decimal without sign or leading zero, as the PHC format writes it. *)
let int_of s =
  if s = "" || String.length s > 9 || (s.[0] = '0' && s <> "0") then None
  else if String.for_all (function '0' .. '9' -> true | _ -> false) s then
    Some (int_of_string s)
  else None

let parse h =
  match String.split_on_char '$' h with
  | [ ""; "argon2id"; "v=19"; ps; salt; hash ] -> (
      let field k s =
        match String.split_on_char '=' s with
        | [ k'; v ] when k = k' -> int_of v
        | _ -> None
      in
      match String.split_on_char ',' ps with
      | [ m; t; p ] -> (
          match
            (field "m" m, field "t" t, field "p" p, unb64 salt, unb64 hash)
          with
          | Some m, Some t, Some p, Some salt, Some hash ->
              let params =
                { memory_kib = m; iterations = t; parallelism = p }
              in
              if String.length salt < 8 || String.length salt > 64 then
                Error "salt not of 8..64 bytes"
              else if String.length hash < 16 || String.length hash > 64 then
                Error "hash not of 16..64 bytes"
              else
                Result.map
                  (fun () -> (params, salt, hash))
                  (check_params params)
          | _ -> Error "malformed parameters, salt or hash")
      | _ -> Error "expected m=,t=,p=")
  | _ :: "argon2id" :: _ -> Error "not version 19"
  | _ -> Error "not an $argon2id$ PHC string"

let params_of_hash h = Result.map (fun (p, _, _) -> p) (parse h)
let needs_rehash ?(params = default) h = params_of_hash h <> Ok params

(* Every byte is compared whatever the differences (as Braid_web.Token.equal,
   which this library cannot link). *)
let equal a b =
  String.length a = String.length b
  &&
  let acc = ref 0 in
  String.iteri
    (fun i c ->
      acc := !acc lor (Char.code c lxor Char.code (String.unsafe_get b i)))
    a;
  !acc = 0

let verify password ~hash =
  match parse hash with
  | Error _ -> false
  | Ok (params, salt, expected) ->
      equal
        (derive params ~salt ~length:(String.length expected) password)
        expected

let hash_on_pool ?pool ?params password =
  Braid_io.Blocking.run ?pool (fun () -> hash ?params password)

let verify_on_pool ?pool password ~hash =
  Braid_io.Blocking.run ?pool (fun () -> verify password ~hash)
