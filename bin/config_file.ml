type directive = { name : string; line : int; change : Layer.change }
type proxy = { prefix : string; proxy_line : int; proxy : Braid_proxy.config }
type t = { file : string; directives : directive list; proxies : proxy list }

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

(* {1 Values}

   Each parses a directive's argument; [name] (the directive's) is for the
   error messages, [dir] (the file's directory) for relative paths. *)

type 'a value = name:string -> dir:string -> string -> ('a, string) result

let natural name s =
  match int_of_string_opt s with
  | Some n when String.for_all (fun c -> c >= '0' && c <= '9') s -> Ok n
  | _ when String.length s > 0 && s.[0] = '-' ->
      Error (Printf.sprintf "%s must not be negative: %s" name s)
  | _ -> Error (Printf.sprintf "%s takes a whole number, not %S" name s)

let whole_number ~min : int value =
 fun ~name ~dir:_ s ->
  let* n = natural name s in
  if n >= min then Ok n
  else Error (Printf.sprintf "%s must be at least %d, not %d" name min n)

(* {1 Durations}

   One syntax for the file and the command line: [DIGITS] or
   [DIGITS.DIGITS], at most three decimals. [float_of_string] would take
   "1e-300", "0x10", "1_000", "+5", "nan" or "inf"; none of them is how
   anyone writes a timeout. The resolution is 1 ms: the sweeper that
   enforces the idle timeouts ticks every 10 ms at the finest, so finer
   digits would promise a precision no timeout has. No unit suffix: every
   duration of the file and the options is in seconds, as Apache's, and a
   decimal says 250 ms as well as "250ms" would. The value is counted in
   whole milliseconds, so the bound is checked exactly. *)

let max_milliseconds = Float.to_int (Braid_server.Config.max_seconds *. 1000.)

let limit_text =
  Printf.sprintf "%.0f seconds (%.0f days)" Braid_server.Config.max_seconds
    (Braid_server.Config.max_seconds /. 86_400.)

let is_digit c = c >= '0' && c <= '9'
let all_digits s = s <> "" && String.for_all is_digit s

let duration ?(zero = false) ~name s =
  let whole, decimals =
    match String.index_opt s '.' with
    | None -> (s, None)
    | Some i ->
        (String.sub s 0 i, Some (String.sub s (i + 1) (String.length s - i - 1)))
  in
  let syntax_ok =
    all_digits whole && Option.fold ~none:true ~some:all_digits decimals
  in
  let decimals = Option.value decimals ~default:"" in
  if String.length s > 0 && s.[0] = '-' then
    Error (Printf.sprintf "%s must not be negative: %s" name s)
  else if not syntax_ok then
    Error
      (Printf.sprintf
         "%s takes a number of seconds (digits, and at most 3 decimals after a \
          point: 30, 2.5), not %S"
         name s)
  else if String.length decimals > 3 then
    Error
      (Printf.sprintf
         "%s takes at most 3 decimals (the resolution is 1 ms), not %s" name s)
  else
    let too_large () =
      Error (Printf.sprintf "%s must be at most %s, not %s" name limit_text s)
    in
    (* [whole] is digits only: [None] is an overflow. *)
    match int_of_string_opt whole with
    | Some w when w <= max_milliseconds / 1000 ->
        let ms =
          (w * 1000)
          + int_of_string
              (decimals ^ String.make (3 - String.length decimals) '0')
        in
        if ms > max_milliseconds then too_large ()
        else if ms = 0 && not zero then
          Error (Printf.sprintf "%s must be positive, not %s" name s)
        else Ok (Float.of_int ms /. 1000.)
    | Some _ | None -> too_large ()

let seconds : float value = fun ~name ~dir:_ s -> duration ~name s

let path : string value =
 fun ~name:_ ~dir p ->
  if p = "" then Error "empty path"
  else if Filename.is_relative p then Ok (Filename.concat dir p)
  else Ok p

(* [keyword] (any case) is [None], anything else a [value]. *)
let or_keyword keyword (value : 'a value) : 'a option value =
 fun ~name ~dir s ->
  if String.lowercase_ascii s = keyword then Ok None
  else Result.map Option.some (value ~name ~dir s)

let cap_or_off s =
  or_keyword "off" (whole_number ~min:1) ~name:"the value" ~dir:"" s

let port s =
  let* p = natural "the port" s in
  if p <= 65535 then Ok p
  else Error (Printf.sprintf "port %d is out of range (0 to 65535)" p)

let ip_address h =
  match Unix.inet_addr_of_string h with
  | ip -> Ok ip
  | exception Failure _ ->
      Error (Printf.sprintf "%S is not an IP address (no name resolution)" h)

(* [PORT], [HOST:PORT] or [[IPV6]:PORT]: the host, if given, and the port. *)
let address : (Unix.inet_addr option * int) value =
 fun ~name ~dir:_ s ->
  let n = String.length s in
  if n > 0 && s.[0] = '[' then
    match String.index_opt s ']' with
    | Some close when close + 1 < n && s.[close + 1] = ':' ->
        let* host = ip_address (String.sub s 1 (close - 1)) in
        let* port = port (String.sub s (close + 2) (n - close - 2)) in
        Ok (Some host, port)
    | _ -> Error (Printf.sprintf "%s: %S is not [IPV6]:PORT" name s)
  else
    match String.rindex_opt s ':' with
    | None ->
        let* port = port s in
        Ok (None, port)
    | Some i ->
        let host = String.sub s 0 i in
        if String.contains host ':' then
          Error
            (Printf.sprintf "%s: write an IPv6 address in brackets: %S" name s)
        else
          let* host = ip_address host in
          let* port = port (String.sub s (i + 1) (n - i - 1)) in
          Ok (Some host, port)

(* A path on the server ("/metrics"), not a file. *)
let url_path : string value =
 fun ~name ~dir:_ p ->
  if Braid_server.Config.endpoint_path p then Ok p
  else Error (Printf.sprintf "%s: %S is not a path like /metrics" name p)

(* IP addresses separated by commas. *)
let ip_addresses : Unix.inet_addr list value =
 fun ~name ~dir:_ s ->
  List.fold_right
    (fun a acc ->
      let* rest = acc in
      match ip_address (String.trim a) with
      | Ok ip -> Ok (ip :: rest)
      | Error msg -> Error (name ^ ": " ^ msg))
    (String.split_on_char ',' s)
    (Ok [])

let paths : string list value =
 fun ~name ~dir s ->
  List.fold_right
    (fun p acc ->
      let* rest = acc in
      match path ~name ~dir (String.trim p) with
      | Ok p -> Ok (p :: rest)
      | Error msg -> Error (name ^ ": " ^ msg))
    (String.split_on_char ',' s)
    (Ok [])

let io_backend : Braid_io.backend value =
 fun ~name ~dir:_ s ->
  match Braid_io.backend_of_string (String.lowercase_ascii s) with
  | Some b -> Ok b
  | None -> Error (Printf.sprintf "%s: %S is neither epoll nor uring" name s)

let on_off : bool value =
 fun ~name ~dir:_ s ->
  match String.lowercase_ascii s with
  | "on" -> Ok true
  | "off" -> Ok false
  | _ -> Error (Printf.sprintf "%s: %S is neither on nor off" name s)

(* {1 The directives} *)

type spec = {
  canonical : string;
  parse : dir:string -> string -> (Layer.change, string) result;
}

let spec canonical (value : 'a value) (change : 'a -> Layer.change) =
  {
    canonical;
    parse = (fun ~dir arg -> Result.map change (value ~name:canonical ~dir arg));
  }

(* Every directive, once. The order is the order they apply in: each
   directive appears at most once, so it matters only where two set the same
   value, and RequestHeaderTimeout comes after Timeout to win over it. *)
let specs =
  [
    spec "Listen" address (fun (host, port) c ->
        let c = Layer.port port c in
        match host with Some ip -> Layer.host ip c | None -> c);
    spec "TlsListen" address Layer.tls_address;
    spec "TlsCertificate" paths Layer.tls_chains;
    spec "TlsCertificateKey" paths Layer.tls_keys;
    spec "HttpsRedirect" on_off Layer.https_redirect;
    spec "Domains" (whole_number ~min:1) Layer.domains;
    spec "IoBackend" io_backend Layer.io_backend;
    spec "DocumentRoot" path Layer.root;
    spec "Precompressed" on_off Layer.precompressed;
    spec "MaxConnections" (whole_number ~min:1) Layer.max_connections;
    spec "MaxConnectionsPerClient"
      (or_keyword "off" (whole_number ~min:1))
      Layer.max_connections_per_client;
    spec "MaxBodySize" (whole_number ~min:0) Layer.max_body;
    spec "BodyBufferSize" (whole_number ~min:0) Layer.body_buffer;
    spec "BodyTempDirectory" path Layer.body_temp_dir;
    spec "BodySpoolBudget"
      (or_keyword "auto" (whole_number ~min:0))
      Layer.spool_budget;
    spec "Timeout" seconds Layer.io_timeout;
    spec "RequestHeaderTimeout" seconds Layer.request_header_timeout;
    spec "KeepAliveTimeout" seconds Layer.keep_alive_timeout;
    spec "HandlerTimeout" (or_keyword "off" seconds) Layer.handler_timeout;
    spec "AccessLog" (or_keyword "off" path) Layer.access_log;
    spec "ErrorLog" (or_keyword "stderr" path) Layer.error_log;
    spec "MetricsPath" url_path Layer.metrics_path;
    spec "MetricsAllow" ip_addresses Layer.metrics_allow;
    spec "HealthPath" url_path Layer.health_path;
    spec "Http2" on_off Layer.http2_enabled;
    spec "Http2MaxConcurrentStreams" (whole_number ~min:1)
      Layer.http2_max_streams;
    spec "Http2StreamWindow" (whole_number ~min:1) Layer.http2_stream_window;
    spec "Http2ConnectionWindow" (whole_number ~min:1)
      Layer.http2_connection_window;
    spec "Http2MaxHeaderListSize" (whole_number ~min:1)
      Layer.http2_max_header_list;
    spec "Http2ControlFrameBudget" (whole_number ~min:1)
      Layer.http2_control_budget;
    spec "Http2ResetBudget" (whole_number ~min:1) Layer.http2_reset_budget;
  ]

let directive_names = List.map (fun s -> s.canonical) specs

let find_spec word =
  let lower = String.lowercase_ascii word in
  List.find_opt (fun s -> String.lowercase_ascii s.canonical = lower) specs

let line_error file line msg = Error (Printf.sprintf "%s:%d: %s" file line msg)

(* [ProxyPass PREFIX URL... [OPTION=VALUE...]]: repeatable, one prefix
   each. Not a change of the server's configuration but routes of their
   own, which the command installs in front of the others. *)
let proxy_pass ~line args =
  (* An option is NAME=VALUE with a bare name before the '=' (its value may
     be a path); a URL has a ':' or '/' there. *)
  let options, urls =
    List.partition
      (fun a ->
        match String.index_opt a '=' with
        | None -> false
        | Some i ->
            i > 0
            && String.for_all
                 (fun c ->
                   (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c = '_')
                 (String.sub a 0 i))
      args
  in
  match urls with
  | [] | [ _ ] ->
      Error "ProxyPass takes a path prefix and at least one upstream URL"
  | prefix :: upstreams ->
      let* () =
        if Braid_server.Config.endpoint_path prefix || prefix = "/" then Ok ()
        else
          Error (Printf.sprintf "ProxyPass: %S is not a path like /api" prefix)
      in
      let* proxy =
        List.fold_left
          (fun acc option ->
            let* (c : Braid_proxy.config) = acc in
            let key, value =
              match String.index_opt option '=' with
              | Some i ->
                  ( String.lowercase_ascii (String.sub option 0 i),
                    String.sub option (i + 1) (String.length option - i - 1) )
              | None -> (option, "")
            in
            let number name =
              match int_of_string_opt value with
              | Some n when n >= 0 -> Ok n
              | _ ->
                  Error
                    (Printf.sprintf "ProxyPass: %s takes a whole number, not %S"
                       name value)
            in
            match key with
            | "balance" -> (
                match String.lowercase_ascii value with
                | "round-robin" -> Ok { c with balance = Round_robin }
                | "least-connections" ->
                    Ok { c with balance = Least_connections }
                | _ ->
                    Error
                      (Printf.sprintf
                         "ProxyPass: balance is round-robin or \
                          least-connections, not %S"
                         value))
            | "retries" ->
                Result.map (fun n -> { c with retries = n }) (number "retries")
            | "max_fails" ->
                Result.map
                  (fun n -> { c with max_fails = max 1 n })
                  (number "max_fails")
            | "fail_timeout" ->
                Result.map
                  (fun s -> { c with fail_timeout = s })
                  (duration ~zero:true ~name:"fail_timeout" value)
            | "preserve_host" -> (
                match String.lowercase_ascii value with
                | "on" -> Ok { c with preserve_host = true }
                | "off" -> Ok { c with preserve_host = false }
                | _ -> Error "ProxyPass: preserve_host is on or off")
            | "forwarded_proto" -> Ok { c with forwarded_proto = Some value }
            | "health_check" ->
                let hc =
                  Option.value c.health_check
                    ~default:(Braid_proxy.health_check value)
                in
                Ok { c with health_check = Some { hc with path = value } }
            | "health_interval" | "health_timeout" -> (
                let* seconds = duration ~name:key value in
                match c.health_check with
                | None ->
                    Error
                      (Printf.sprintf "ProxyPass: %s without health_check=PATH"
                         key)
                | Some hc ->
                    Ok
                      {
                        c with
                        health_check =
                          Some
                            (if key = "health_interval" then
                               { hc with interval = seconds }
                             else { hc with timeout = seconds });
                      })
            | _ -> Error (Printf.sprintf "ProxyPass: unknown option %S" key))
          (Ok { Braid_proxy.default with upstreams })
          options
      in
      (* Checked now, so a bad URL is reported at its line. *)
      let* () =
        List.fold_left
          (fun acc u ->
            let* () = acc in
            match Braid_client.Url.of_string u with
            | Ok _ -> Ok ()
            | Error m -> Error (Printf.sprintf "ProxyPass: upstream %S: %s" u m))
          (Ok ()) upstreams
      in
      Ok { prefix; proxy_line = line; proxy }

let parse ~file text =
  let dir = Filename.dirname file in
  let proxies = ref [] in
  let rec go directives number = function
    | [] ->
        Ok
          {
            file;
            directives = List.rev directives;
            proxies = List.rev !proxies;
          }
    | line :: rest -> (
        let error = line_error file number in
        match words line with
        | Error msg -> error msg
        | Ok [] -> go directives (number + 1) rest
        | Ok (word :: args) when String.lowercase_ascii word = "proxypass" -> (
            match proxy_pass ~line:number args with
            | Error msg -> error msg
            | Ok p -> (
                match List.find_opt (fun q -> q.prefix = p.prefix) !proxies with
                | Some q ->
                    error
                      (Printf.sprintf
                         "duplicate ProxyPass %s (first at line %d)" p.prefix
                         q.proxy_line)
                | None ->
                    proxies := p :: !proxies;
                    go directives (number + 1) rest))
        | Ok (word :: args) -> (
            match find_spec word with
            | None -> error (Printf.sprintf "unknown directive %S" word)
            | Some { canonical = name; parse } -> (
                match
                  (List.find_opt (fun d -> d.name = name) directives, args)
                with
                | Some first, _ ->
                    error
                      (Printf.sprintf "duplicate %s (first at line %d)" name
                         first.line)
                | None, [] -> error (Printf.sprintf "%s needs an argument" name)
                | None, _ :: _ :: _ ->
                    error
                      (Printf.sprintf "%s takes one argument, got %d" name
                         (List.length args))
                | None, [ arg ] -> (
                    match parse ~dir arg with
                    | Error msg -> error msg
                    | Ok change ->
                        go
                          ({ name; line = number; change } :: directives)
                          (number + 1) rest))))
  in
  go [] 1 (String.split_on_char '\n' text)

let load file =
  match In_channel.with_open_bin file In_channel.input_all with
  | text -> parse ~file text
  | exception Sys_error msg ->
      (* Opening names the file ("f: No such file or directory"), reading a
         directory does not ("Is a directory"). *)
      if String.starts_with ~prefix:file msg then Error msg
      else Error (file ^ ": " ^ msg)

let layer t =
  List.concat_map
    (fun name ->
      List.filter_map
        (fun d ->
          if d.name = name then
            Some
              {
                Layer.origin = Printf.sprintf "%s:%d" t.file d.line;
                change = d.change;
              }
          else None)
        t.directives)
    directive_names
