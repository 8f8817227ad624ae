let max_seconds = 31_536_000.

type timeouts = {
  request_header : float;
  keep_alive : float;
  body : float;
  send : float;
  handler : float option;
}

type tls = {
  address : Unix.sockaddr;
  certificates : Braid_tls.Server_context.certificate list;
  redirect : bool;
}

type http2 = {
  enabled : bool;
  max_concurrent_streams : int;
  stream_window : int;
  connection_window : int;
  max_frame_size : int;
  max_header_list_size : int;
  control_frame_budget : int;
  reset_budget : int;
}

let default_http2 =
  {
    enabled = true;
    max_concurrent_streams = 100;
    stream_window = 262_144;
    connection_window = 1_048_576;
    max_frame_size = 16_384;
    max_header_list_size = 65_536;
    control_frame_budget = 1000;
    reset_budget = 200;
  }

type per_client = No_cap | Cap of int | Cap_except_loopback of int

let client_cap per_client (peer : Unix.sockaddr) =
  match (per_client, peer) with
  | No_cap, _ | _, Unix.ADDR_UNIX _ -> None
  | Cap n, Unix.ADDR_INET _ -> Some n
  | Cap_except_loopback n, (Unix.ADDR_INET _ as peer) ->
      if Address.is_loopback peer then None else Some n

type t = {
  limits : Braid_http.Limits.t;
  root : string option;
  index : string;
  precompressed : bool;
  metrics_path : string option;
  metrics_allow : Unix.inet_addr list;
  health_path : string option;
  body_buffer : int;
  body_temp_dir : string;
  spool_budget : int option;
  input_buffer : int;
  output_buffer : int;
  linger : float;
  timeouts : timeouts;
  max_connections : int;
  max_connections_per_client : per_client;
  minor_heap_words : int;
  listen : Unix.sockaddr;
  domains : int;
  io_backend : Braid_io.backend option;
  access_log : string option;
  error_log : string option;
  tls : tls option;
  http2 : http2;
}

let connections_for_descriptors n = max 1 ((min n 1_048_576 * 9 / 10) - 64)

(* The soft limit as the program starts: a program that raises it first
   ({!Server.raise_descriptor_limit}) derives its limit again, as [braid
   serve] does. *)
let default_max_connections =
  match System.descriptor_limits () with
  | soft, _ -> connections_for_descriptors soft
  | exception Unix.Unix_error _ -> 1000

let default =
  {
    limits = Braid_http.Limits.default;
    root = None;
    index = "index.html";
    precompressed = false;
    metrics_path = None;
    metrics_allow = [];
    health_path = None;
    body_buffer = 65536;
    body_temp_dir = Filename.get_temp_dir_name ();
    spool_budget = None;
    input_buffer = 4096;
    output_buffer = 16384;
    linger = 2.;
    timeouts =
      {
        request_header = 20.;
        keep_alive = 5.;
        body = 60.;
        send = 60.;
        handler = None;
      };
    max_connections = default_max_connections;
    max_connections_per_client = Cap_except_loopback 256;
    minor_heap_words = 1 lsl 20;
    listen = Unix.ADDR_INET (Unix.inet_addr_loopback, 8080);
    domains = 1;
    io_backend = None;
    access_log = None;
    error_log = None;
    tls = None;
    http2 = default_http2;
  }

let endpoint_path p =
  String.length p > 1 && p.[0] = '/' && not (String.contains p '?')

let development_tls ?dir address =
  let dir =
    match dir with
    | Some dir -> dir
    | None -> Braid_tls.Dev_certificate.default_directory ()
  in
  Result.map
    (fun (cert : Braid_tls.Dev_certificate.t) ->
      ( {
          address;
          certificates = [ { chain = cert.certificate; key = cert.key } ];
          redirect = false;
        },
        cert ))
    (Braid_tls.Dev_certificate.ensure ~dir ())
