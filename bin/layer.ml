open Braid_server

type change = Config.t -> Config.t
type setting = { origin : string; change : change }
type t = setting list

let apply layer c = List.fold_left (fun c s -> s.change c) c layer

(* The first setting of [layer] whose addition, over [defaults] and under
   [above], breaks the configuration with the error [msg] of the whole: a
   setting that breaks it otherwise only because a later one completes it
   (a port for HTTPS before its certificate) is not the culprit. *)
let first_breaking ~defaults layer ~above ~msg =
  let rec go applied = function
    | [] -> None
    | s :: rest -> (
        let applied = s.change applied in
        match Server.check_config (List.fold_left ( |> ) applied above) with
        | Error m when String.equal m msg -> Some (s.origin ^ ": " ^ msg)
        | Ok _ | Error _ -> go applied rest)
  in
  go defaults layer

let resolve ~defaults layers =
  let full = List.fold_left (fun c layer -> apply layer c) defaults layers in
  match Server.check_config full with
  | Ok _ as ok -> ok
  | Error msg ->
      (* From the highest precedence down, each layer under the ones above
         it. [above] lists the changes of those, in the order they apply. *)
      let rec blame above = function
        | [] -> Error msg (* No one setting makes this error: say it alone. *)
        | layer :: lower -> (
            match first_breaking ~defaults layer ~above ~msg with
            | Some error -> Error error
            | None -> blame (List.map (fun s -> s.change) layer @ above) lower)
      in
      blame [] (List.rev layers)

(* {1 Changes} *)

(* A Unix-domain address has neither: the default's stand in. *)
let host_and_port (c : Config.t) =
  match c.listen with
  | Unix.ADDR_INET (ip, port) -> (ip, port)
  | Unix.ADDR_UNIX _ -> (Unix.inet_addr_loopback, 8080)

(* HTTPS follows the plain listener's host unless given its own. *)
let default_tls_port = 8443

let tls_or_default (c : Config.t) : Config.tls =
  match c.tls with
  | Some tls -> tls
  | None ->
      let ip, _ = host_and_port c in
      {
        address = Unix.ADDR_INET (ip, default_tls_port);
        certificates = [];
        redirect = false;
      }

let host ip (c : Config.t) =
  let _, port = host_and_port c in
  let tls =
    Option.map
      (fun (tls : Config.tls) ->
        match tls.address with
        | Unix.ADDR_INET (_, p) -> { tls with address = Unix.ADDR_INET (ip, p) }
        | Unix.ADDR_UNIX _ -> tls)
      c.tls
  in
  { c with listen = Unix.ADDR_INET (ip, port); tls }

let tls_address (host, port) (c : Config.t) =
  let tls = tls_or_default c in
  let ip =
    match (host, tls.address) with
    | Some ip, _ -> ip
    | None, Unix.ADDR_INET (ip, _) -> ip
    | None, Unix.ADDR_UNIX _ -> fst (host_and_port c)
  in
  { c with tls = Some { tls with address = Unix.ADDR_INET (ip, port) } }

(* Chains and keys are given apart (two flags, two directives) and paired
   in order; a missing half stays [""], which {!Braid_server.Server.check_config}
   refuses. *)
let pair chains keys =
  let rec go chains keys =
    match (chains, keys) with
    | [], [] -> []
    | chain :: chains, key :: keys ->
        { Braid_tls.Server_context.chain; key } :: go chains keys
    | chain :: chains, [] -> { chain; key = "" } :: go chains []
    | [], key :: keys -> { chain = ""; key } :: go [] keys
  in
  go chains keys

(* The given halves, paired with the other halves already set. *)
let set_certificates (c : Config.t) ~chains ~keys =
  let tls = tls_or_default c in
  let given half =
    List.filter_map
      (fun (k : Braid_tls.Server_context.certificate) ->
        match half k with "" -> None | file -> Some file)
      tls.certificates
  in
  let chains = Option.value chains ~default:(given (fun k -> k.chain))
  and keys = Option.value keys ~default:(given (fun k -> k.key)) in
  { c with tls = Some { tls with certificates = pair chains keys } }

let tls_chains chains c = set_certificates c ~chains:(Some chains) ~keys:None
let tls_keys keys c = set_certificates c ~chains:None ~keys:(Some keys)

let https_redirect on (c : Config.t) =
  { c with tls = Some { (tls_or_default c) with redirect = on } }

let port port (c : Config.t) =
  let ip, _ = host_and_port c in
  { c with listen = Unix.ADDR_INET (ip, port) }

let domains n (c : Config.t) = { c with domains = n }
let io_backend b (c : Config.t) = { c with io_backend = Some b }
let root dir (c : Config.t) = { c with root = Some dir }
let max_connections n (c : Config.t) = { c with max_connections = n }
let precompressed on (c : Config.t) = { c with precompressed = on }
let metrics_path path (c : Config.t) = { c with metrics_path = Some path }
let metrics_allow ips (c : Config.t) = { c with metrics_allow = ips }
let health_path path (c : Config.t) = { c with health_path = Some path }

let max_connections_per_client n (c : Config.t) =
  let cap = match n with Some n -> Config.Cap n | None -> No_cap in
  { c with max_connections_per_client = cap }

let max_body n (c : Config.t) =
  { c with limits = { c.limits with max_body = n } }

let timeouts f (c : Config.t) = { c with timeouts = f c.timeouts }

let io_timeout s =
  timeouts (fun t -> { t with request_header = s; body = s; send = s })

let request_header_timeout s = timeouts (fun t -> { t with request_header = s })
let keep_alive_timeout s = timeouts (fun t -> { t with keep_alive = s })
let body_timeout s = timeouts (fun t -> { t with body = s })
let send_timeout s = timeouts (fun t -> { t with send = s })
let handler_timeout s = timeouts (fun t -> { t with handler = s })
let body_buffer n (c : Config.t) = { c with body_buffer = n }
let body_temp_dir dir (c : Config.t) = { c with body_temp_dir = dir }
let spool_budget n (c : Config.t) = { c with spool_budget = n }
let access_log path (c : Config.t) = { c with access_log = path }
let error_log path (c : Config.t) = { c with error_log = path }

(* HTTP/2 *)
let http2 f (c : Config.t) = { c with http2 = f c.http2 }
let http2_enabled on = http2 (fun h -> { h with enabled = on })
let http2_max_streams n = http2 (fun h -> { h with max_concurrent_streams = n })
let http2_stream_window n = http2 (fun h -> { h with stream_window = n })

let http2_connection_window n =
  http2 (fun h -> { h with connection_window = n })

let http2_max_header_list n =
  http2 (fun h -> { h with max_header_list_size = n })

let http2_control_budget n =
  http2 (fun h -> { h with control_frame_budget = n })

let http2_reset_budget n = http2 (fun h -> { h with reset_budget = n })
