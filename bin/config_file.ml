open Braid_server

type listen = { host : string option; port : int }

type t = {
  file : string;
  listen : listen option;
  domains : int option;
  document_root : string option;
  max_connections : int option;
  max_body_size : int option;
  timeout : float option;
  request_header_timeout : float option;
  keep_alive_timeout : float option;
  handler_timeout : float option option;
  access_log : string option option;
  error_log : string option option;
  lines : (string * int) list;
}

let empty file =
  {
    file;
    listen = None;
    domains = None;
    document_root = None;
    max_connections = None;
    max_body_size = None;
    timeout = None;
    request_header_timeout = None;
    keep_alive_timeout = None;
    handler_timeout = None;
    access_log = None;
    error_log = None;
    lines = [];
  }

let ( let* ) = Result.bind

(* {1 Lines into words} *)

let is_blank c = c = ' ' || c = '\t' || c = '\r'

let words line =
  let n = String.length line in
  let rec skip i = if i < n && is_blank line.[i] then skip (i + 1) else i in
  let rec quoted b i =
    if i >= n then Error "unterminated quoted string"
    else
      match line.[i] with
      | '"' ->
          if i + 1 < n && not (is_blank line.[i + 1]) then
            Error "a quoted string must be followed by a blank"
          else Ok (Buffer.contents b, i + 1)
      | '\\' when i + 1 < n && (line.[i + 1] = '"' || line.[i + 1] = '\\') ->
          Buffer.add_char b line.[i + 1];
          quoted b (i + 2)
      | c ->
          Buffer.add_char b c;
          quoted b (i + 1)
  in
  let rec bare i j =
    if j < n && not (is_blank line.[j]) then bare i (j + 1)
    else (String.sub line i (j - i), j)
  in
  let rec go acc i =
    let i = skip i in
    if i >= n then Ok (List.rev acc)
    else if line.[i] = '"' then
      let* w, j = quoted (Buffer.create 16) (i + 1) in
      go (w :: acc) j
    else
      let w, j = bare i i in
      go (w :: acc) j
  in
  let i = skip 0 in
  if i < n && line.[i] = '#' then Ok [] else go [] 0

(* {1 Values} *)

let int_value name s =
  match int_of_string_opt s with
  | Some n when String.for_all (fun c -> c >= '0' && c <= '9') s -> Ok n
  | _ when String.length s > 0 && s.[0] = '-' ->
      Error (Printf.sprintf "%s must not be negative: %s" name s)
  | _ -> Error (Printf.sprintf "%s takes a whole number, not %S" name s)

let at_least name min n =
  if n >= min then Ok n
  else Error (Printf.sprintf "%s must be at least %d, not %d" name min n)

let seconds name s =
  let digits_and_dot =
    s <> ""
    && String.for_all (fun c -> (c >= '0' && c <= '9') || c = '.') s
    && s <> "."
  in
  match float_of_string_opt s with
  | Some f when digits_and_dot && f > 0. && Float.is_finite f -> Ok f
  | Some f when digits_and_dot && f = 0. ->
      Error (Printf.sprintf "%s must be positive" name)
  | _ when String.length s > 0 && s.[0] = '-' ->
      Error (Printf.sprintf "%s must not be negative: %s" name s)
  | _ -> Error (Printf.sprintf "%s takes a number of seconds, not %S" name s)

let port_value s =
  let* p = int_value "the port" s in
  if p <= 65535 then Ok p
  else Error (Printf.sprintf "port %d is out of range (0 to 65535)" p)

let ip_literal h =
  match Unix.inet_addr_of_string h with
  | _ -> Ok h
  | exception Failure _ ->
      Error (Printf.sprintf "%S is not an IP address (no name resolution)" h)

(* [PORT], [HOST:PORT] or [[IPV6]:PORT]. *)
let listen_value s =
  let n = String.length s in
  if n > 0 && s.[0] = '[' then
    match String.index_opt s ']' with
    | Some close when close + 1 < n && s.[close + 1] = ':' ->
        let* host = ip_literal (String.sub s 1 (close - 1)) in
        let* port = port_value (String.sub s (close + 2) (n - close - 2)) in
        Ok { host = Some host; port }
    | _ -> Error (Printf.sprintf "Listen: %S is not [IPV6]:PORT" s)
  else
    match String.rindex_opt s ':' with
    | None ->
        let* port = port_value s in
        Ok { host = None; port }
    | Some i ->
        let host = String.sub s 0 i in
        if String.contains host ':' then
          Error
            (Printf.sprintf "Listen: write an IPv6 address in brackets: %S" s)
        else
          let* host = ip_literal host in
          let* port = port_value (String.sub s (i + 1) (n - i - 1)) in
          Ok { host = Some host; port }

let path_value file p =
  if p = "" then Error "empty path"
  else if Filename.is_relative p then
    Ok (Filename.concat (Filename.dirname file) p)
  else Ok p

(* {1 Directives} *)

(* Canonical names, matched case-insensitively. *)
let directives =
  [
    "Listen";
    "Domains";
    "DocumentRoot";
    "MaxConnections";
    "MaxBodySize";
    "Timeout";
    "RequestHeaderTimeout";
    "KeepAliveTimeout";
    "HandlerTimeout";
    "AccessLog";
    "ErrorLog";
  ]

let directive t name arg =
  let file = t.file in
  match name with
  | "Listen" ->
      let* l = listen_value arg in
      Ok { t with listen = Some l }
  | "Domains" ->
      let* n = Result.bind (int_value name arg) (at_least name 1) in
      Ok { t with domains = Some n }
  | "DocumentRoot" ->
      let* p = path_value file arg in
      Ok { t with document_root = Some p }
  | "MaxConnections" ->
      let* n = Result.bind (int_value name arg) (at_least name 1) in
      Ok { t with max_connections = Some n }
  | "MaxBodySize" ->
      let* n = int_value name arg in
      Ok { t with max_body_size = Some n }
  | "Timeout" ->
      let* s = seconds name arg in
      Ok { t with timeout = Some s }
  | "RequestHeaderTimeout" ->
      let* s = seconds name arg in
      Ok { t with request_header_timeout = Some s }
  | "KeepAliveTimeout" ->
      let* s = seconds name arg in
      Ok { t with keep_alive_timeout = Some s }
  | "HandlerTimeout" ->
      if String.lowercase_ascii arg = "off" then
        Ok { t with handler_timeout = Some None }
      else
        let* s = seconds name arg in
        Ok { t with handler_timeout = Some (Some s) }
  | "AccessLog" ->
      if String.lowercase_ascii arg = "off" then
        Ok { t with access_log = Some None }
      else
        let* p = path_value file arg in
        Ok { t with access_log = Some (Some p) }
  | "ErrorLog" ->
      if String.lowercase_ascii arg = "stderr" then
        Ok { t with error_log = Some None }
      else
        let* p = path_value file arg in
        Ok { t with error_log = Some (Some p) }
  | _ -> assert false

let line_error file line msg = Error (Printf.sprintf "%s:%d: %s" file line msg)

let parse ~file text =
  let lines = String.split_on_char '\n' text in
  let rec go t number = function
    | [] -> Ok { t with lines = List.rev t.lines }
    | line :: rest -> (
        match words line with
        | Error msg -> line_error file number msg
        | Ok [] -> go t (number + 1) rest
        | Ok (word :: args) -> (
            let lower = String.lowercase_ascii word in
            match
              List.find_opt
                (fun d -> String.lowercase_ascii d = lower)
                directives
            with
            | None ->
                line_error file number
                  (Printf.sprintf "unknown directive %S" word)
            | Some name -> (
                match (List.assoc_opt name t.lines, args) with
                | Some first, _ ->
                    line_error file number
                      (Printf.sprintf "duplicate %s (first at line %d)" name
                         first)
                | None, [] ->
                    line_error file number
                      (Printf.sprintf "%s needs an argument" name)
                | None, _ :: _ :: _ ->
                    line_error file number
                      (Printf.sprintf "%s takes one argument, got %d" name
                         (List.length args))
                | None, [ arg ] -> (
                    match directive t name arg with
                    | Error msg -> line_error file number msg
                    | Ok t ->
                        go
                          { t with lines = (name, number) :: t.lines }
                          (number + 1) rest))))
  in
  go (empty file) 1 lines

let load file =
  match In_channel.with_open_bin file In_channel.input_all with
  | text -> parse ~file text
  | exception Sys_error msg ->
      (* [Sys_error] already names the file. *)
      Error msg

let apply f (c : Config.t) =
  let get default = Option.value ~default in
  let timeouts : Config.timeouts =
    let t = c.timeouts in
    let io = f.timeout in
    {
      request_header = get (get t.request_header io) f.request_header_timeout;
      keep_alive = get t.keep_alive f.keep_alive_timeout;
      body = get t.body io;
      send = get t.send io;
      handler = get t.handler f.handler_timeout;
    }
  in
  {
    c with
    root = (match f.document_root with Some _ as r -> r | None -> c.root);
    max_connections = get c.max_connections f.max_connections;
    limits = { c.limits with max_body = get c.limits.max_body f.max_body_size };
    timeouts;
  }

(* [f] with only the directives of [names]. *)
let only f names =
  let has n = List.mem n names in
  let keep n v = if has n then v else None in
  {
    f with
    listen = keep "Listen" f.listen;
    domains = keep "Domains" f.domains;
    document_root = keep "DocumentRoot" f.document_root;
    max_connections = keep "MaxConnections" f.max_connections;
    max_body_size = keep "MaxBodySize" f.max_body_size;
    timeout = keep "Timeout" f.timeout;
    request_header_timeout =
      keep "RequestHeaderTimeout" f.request_header_timeout;
    keep_alive_timeout = keep "KeepAliveTimeout" f.keep_alive_timeout;
    handler_timeout = keep "HandlerTimeout" f.handler_timeout;
    access_log = keep "AccessLog" f.access_log;
    error_log = keep "ErrorLog" f.error_log;
  }

let to_config ?(override = Fun.id) f base =
  match Server.check_config (override (apply f base)) with
  | Ok _ as ok -> ok
  | Error msg -> (
      match Server.check_config (override base) with
      | Error _ as e -> e
      | Ok _ ->
          (* The first directive whose addition breaks the configuration. *)
          let rec blame seen = function
            | [] -> Error (Printf.sprintf "%s: %s" f.file msg)
            | (name, line) :: rest -> (
                let seen = name :: seen in
                match
                  Server.check_config (override (apply (only f seen) base))
                with
                | Ok _ -> blame seen rest
                | Error msg -> line_error f.file line msg)
          in
          blame [] f.lines)
