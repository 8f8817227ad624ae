type t = {
  certificate : string;
  key : string;
  names : string list;
  not_after : float;
  created : bool;
}

external generate : string -> float -> float -> string * string
  = "braid_tls_dev_certificate_generate"

external inspect : string -> (float * string list) option
  = "braid_tls_dev_certificate_inspect"

let default_names = [ "localhost"; "127.0.0.1"; "::1" ]

let default_directory () =
  let non_empty v =
    match Sys.getenv_opt v with Some "" | None -> None | s -> s
  in
  match (non_empty "XDG_STATE_HOME", non_empty "HOME") with
  | Some state, _ -> Filename.concat state "braid/dev-certificate"
  | None, Some home -> Filename.concat home ".local/state/braid/dev-certificate"
  | None, None ->
      Printf.sprintf "/tmp/braid-dev-certificate-%d" (Unix.getuid ())

let day = 86400.

(* "IP:" for what inet_addr_of_string reads, so 127.0.0.1 and ::1 are IP
   address entries, which clients match against an address they dialled. *)
let subject_alt_name names =
  String.concat ","
    (List.map
       (fun n ->
         match Unix.inet_addr_of_string n with
         | _ -> "IP:" ^ n
         | exception Failure _ -> "DNS:" ^ n)
       names)

(* inet_ntop's form, as [inspect] reports addresses: "::0001" is "::1". *)
let canonical n =
  match Unix.inet_addr_of_string n with
  | a -> Unix.string_of_inet_addr a
  | exception Failure _ -> String.lowercase_ascii n

let same_names a b =
  List.sort_uniq compare (List.map canonical a)
  = List.sort_uniq compare (List.map canonical b)

let ( let* ) = Result.bind

let error_of what path = function
  | Unix.Unix_error (e, _, _) ->
      Error (Printf.sprintf "%s %s: %s" what path (Unix.error_message e))
  | Sys_error msg -> Error (Printf.sprintf "%s %s: %s" what path msg)
  | e -> raise e

let rec make_directory dir =
  if not (Sys.file_exists dir) then (
    make_directory (Filename.dirname dir);
    try Unix.mkdir dir 0o700 with Unix.Unix_error (EEXIST, _, _) -> ())

let read_file path =
  match In_channel.with_open_bin path In_channel.input_all with
  | s -> Some s
  | exception Sys_error _ -> None

(* Written beside, then renamed over: a reader sees the old file or the new
   one, never a part. [fchmod] because the umask filters [openfile]'s mode. *)
let write_file path ~perm contents =
  let temporary = path ^ ".new" in
  try
    let fd =
      Unix.openfile temporary [ O_WRONLY; O_CREAT; O_TRUNC; O_CLOEXEC ] perm
    in
    Fun.protect
      ~finally:(fun () -> Unix.close fd)
      (fun () ->
        Unix.fchmod fd perm;
        let n = String.length contents in
        if Unix.write_substring fd contents 0 n <> n then failwith "short write";
        Unix.fsync fd);
    Unix.rename temporary path;
    Ok ()
  with e -> error_of "cannot write" path e

let key_is_private path =
  match Unix.stat path with
  | st -> st.st_perm = 0o600
  | exception Unix.Unix_error _ -> false

let ensure ?(names = default_names) ?(validity_days = 30) ?now ~dir () =
  let now = match now with Some t -> t | None -> Unix.gettimeofday () in
  let certificate = Filename.concat dir "cert.pem"
  and key = Filename.concat dir "key.pem" in
  if names = [] then Error "Dev_certificate.ensure: no names"
  else if List.exists (fun n -> n = "" || String.contains n ',') names then
    Error "Dev_certificate.ensure: an empty name, or one with a comma"
  else
    let found =
      match (read_file certificate, key_is_private key) with
      | Some pem, true -> (
          match inspect pem with
          | Some (not_after, held)
            when not_after > now +. day && same_names held names ->
              Some { certificate; key; names; not_after; created = false }
          | _ -> None)
      | _ -> None
    in
    match found with
    | Some t -> Ok t
    | None ->
        let* () =
          try Ok (make_directory dir) with e -> error_of "cannot create" dir e
        in
        let not_after = now +. (float_of_int validity_days *. day) in
        let cert_pem, key_pem =
          generate (subject_alt_name names) (now -. 300.) not_after
        in
        let* () = write_file key ~perm:0o600 key_pem in
        let* () = write_file certificate ~perm:0o644 cert_pem in
        Ok { certificate; key; names; not_after; created = true }
