open Braid_web
module C = Braid_client
module Headers = Braid_http.Headers

type balance = Round_robin | Least_connections
type health_check = { path : string; interval : float; timeout : float }

let health_check ?(interval = 5.) ?(timeout = 2.) path =
  { path; interval; timeout }

type config = {
  upstreams : string list;
  balance : balance;
  max_fails : int;
  fail_timeout : float;
  retries : int;
  preserve_host : bool;
  forwarded_proto : string option;
  health_check : health_check option;
}

let default =
  {
    upstreams = [];
    balance = Round_robin;
    max_fails = 3;
    fail_timeout = 10.;
    retries = 1;
    preserve_host = true;
    forwarded_proto = None;
    health_check = None;
  }

let client_config =
  {
    C.default_config with
    connect_timeout = 5.;
    first_byte_timeout = Some 60.;
    read_timeout = Some 60.;
    max_connections = 256;
    max_idle = 64;
    redirects = Never;
    limits =
      {
        Braid_http.Limits.default with
        max_header_bytes = 65536;
        max_header_fields = 100;
        max_body = max_int;
      };
  }

(* One upstream's state, shared by every loop: counters are atomic. Kept
   across {!update} when its URL stays. *)
type upstream = {
  name : string;  (** The URL as configured. *)
  url : C.Url.t;
  authority : string;  (** [url]'s, for a [Host] field. *)
  active : int Atomic.t;  (** Requests in progress, over all loops. *)
  fails : int Atomic.t;  (** Failures in a row. *)
  down_until : int Atomic.t;  (** Monotonic ns; ejected before it. *)
  failed_check : bool Atomic.t;
      (** Its last active health check failed: left out until one passes. *)
}

type set = { upstreams : upstream array; config : config }

type t = {
  client : C.t;
  set : set Atomic.t;
  turn : int Atomic.t;
      (** Round-robin position, and least-connections' ties. *)
  last_peer : (Unix.inet_addr * string) Atomic.t;
      (** The last client address written out, and its text: a proxy sees few
          distinct peers in a row (a load balancer, keep-alive connections), and
          Unix.string_of_inet_addr (inet_ntop, through printf) cost a tenth of
          the user-space instructions of a small request. *)
}

let ( let* ) = Result.bind

let make_set ~previous (config : config) =
  let* () =
    if config.upstreams = [] then Error "no upstream"
    else if config.max_fails < 1 then Error "max_fails must be at least 1"
    else if config.retries < 0 then Error "retries must not be negative"
    else if not (config.fail_timeout >= 0.) then
      Error "fail_timeout must not be negative"
    else if
      not (Option.fold ~none:true ~some:Headers.is_value config.forwarded_proto)
    then Error "bad forwarded_proto"
    else
      match config.health_check with
      | None -> Ok ()
      | Some { path; interval; timeout } ->
          if path = "" || path.[0] <> '/' || not (Headers.is_value path) then
            Error "the health check's path must start with /"
          else if not (interval > 0. && timeout > 0.) then
            Error "the health check's interval and timeout must be positive"
          else Ok ()
  in
  let* upstreams =
    List.fold_right
      (fun name acc ->
        let* rest = acc in
        match C.Url.of_string name with
        | Error m -> Error (Printf.sprintf "upstream %S: %s" name m)
        | Ok url -> (
            if url.query <> None then
              Error (Printf.sprintf "upstream %S: a query is not allowed" name)
            else
              match Array.find_opt (fun u -> u.name = name) previous with
              | Some u -> Ok (u :: rest)
              | None ->
                  Ok
                    ({
                       name;
                       url;
                       authority = C.Url.authority url;
                       active = Atomic.make 0;
                       fails = Atomic.make 0;
                       down_until = Atomic.make 0;
                       failed_check = Atomic.make false;
                     }
                    :: rest)))
      config.upstreams (Ok [])
  in
  Ok { upstreams = Array.of_list upstreams; config }

let create ~client config =
  let* set = make_set ~previous:[||] config in
  Ok
    {
      client;
      set = Atomic.make set;
      turn = Atomic.make 0;
      last_peer = Atomic.make (Unix.inet_addr_any, "0.0.0.0");
    }

let update t config =
  let* set = make_set ~previous:(Atomic.get t.set).upstreams config in
  Atomic.set t.set set;
  Ok ()

(* {1 Choosing} *)

let usable ~now u =
  Atomic.get u.down_until <= now && not (Atomic.get u.failed_check)

(* The balancing policy's choice among the [n] (at least one) [candidates],
   from the next turn. *)
let choose t set candidates n =
  let start = Atomic.fetch_and_add t.turn 1 land max_int in
  match set.config.balance with
  | Round_robin -> candidates.(start mod n)
  | Least_connections ->
      let best = ref candidates.(start mod n) in
      for k = 1 to n - 1 do
        let u = candidates.((start + k) mod n) in
        if Atomic.get u.active < Atomic.get !best.active then best := u
      done;
      !best

(* The first attempt, every upstream usable (the common case): chosen
   without the lists the general case builds. *)
let pick_first t set ~now =
  let all = set.upstreams in
  let n = Array.length all in
  if not (Array.for_all (usable ~now) all) then None
  else Some (choose t set all n)

let pick t set ~tried =
  let now = Braid_io.Time.now_ns () in
  match if tried = [] then pick_first t set ~now else None with
  | Some _ as u -> u
  | None ->
      let untried =
        List.filter
          (fun u -> not (List.memq u tried))
          (Array.to_list set.upstreams)
      in
      let alive = List.filter (usable ~now) untried in
      let candidates = Array.of_list (if alive = [] then untried else alive) in
      let n = Array.length candidates in
      if n = 0 then None else Some (choose t set candidates n)

let succeeded u = if Atomic.get u.fails <> 0 then Atomic.set u.fails 0

let failed set u =
  if Atomic.fetch_and_add u.fails 1 + 1 >= set.config.max_fails then (
    Atomic.set u.fails 0;
    Atomic.set u.down_until
      (Braid_io.Time.now_ns () + Float.to_int (set.config.fail_timeout *. 1e9)))

(* {1 Header fields} *)

let is_hop_by_hop = Headers.is_hop_by_hop

(* Names listed by the message's Connection fields: hop-by-hop too. *)
let connection_options headers =
  List.concat_map
    (fun v ->
      List.filter_map
        (fun s ->
          let s = String.trim s in
          if s = "" then None else Some s)
        (String.split_on_char ',' v))
    (Headers.find_all headers "connection")

(* The fields of [headers] that go on to the next hop, in order, but those
   [also] drops. *)
let end_to_end ~also headers =
  let options = connection_options headers in
  Headers.fold
    (fun name value acc ->
      if
        is_hop_by_hop name || also name
        || (options <> [] && List.exists (Headers.equal_name name) options)
      then acc
      else (name, value) :: acc)
    headers []
  |> List.rev

let client_ip t (r : Handler.request) =
  match r.peer with
  | Some (ADDR_INET (ip, _)) ->
      let last, text = Atomic.get t.last_peer in
      if ip = last then Some text
      else
        let text = Unix.string_of_inet_addr ip in
        Atomic.set t.last_peer (ip, text);
        Some text
  | _ -> None

(* RFC 7239 §6: an IPv6 address is bracketed and the node quoted. *)
let forwarded_node ip =
  if String.contains ip ':' then "\"[" ^ ip ^ "]\"" else ip

let quoted s =
  if not (String.exists (fun c -> c = '"' || c = '\\') s) then
    String.concat "" [ "\""; s; "\"" ]
  else
    let b = Buffer.create (String.length s + 2) in
    Buffer.add_char b '"';
    String.iter
      (fun c ->
        if c = '"' || c = '\\' then Buffer.add_char b '\\';
        Buffer.add_char b c)
      s;
    Buffer.add_char b '"';
    Buffer.contents b

let append headers name value =
  match Headers.find_all headers name with
  | [] -> value
  | previous -> String.concat ", " previous ^ ", " ^ value

(* The request's fields the proxy replaces with its own. *)
let replaced_in_request name =
  match String.length name with
  | 4 -> Headers.equal_name name "host"
  | 9 -> Headers.equal_name name "forwarded"
  | 14 -> Headers.equal_name name "content-length"
  | 15 -> Headers.equal_name name "x-forwarded-for"
  | 16 -> Headers.equal_name name "x-forwarded-host"
  | 17 -> Headers.equal_name name "x-forwarded-proto"
  | _ -> false

let request_headers t set (u : upstream) (r : Handler.request) =
  let headers = r.head.headers in
  let host = Headers.find headers "host" in
  let proto =
    match set.config.forwarded_proto with
    | Some scheme -> scheme
    | None -> if r.secure then "https" else "http"
  in
  let host_field =
    if set.config.preserve_host then
      match host with Some h -> h | None -> u.authority
    else u.authority
  in
  let ip = client_ip t r in
  let forwarded =
    let proto = "proto=" ^ proto in
    let host =
      match host with
      | Some h -> "host=" ^ quoted h ^ ";" ^ proto
      | None -> proto
    in
    match ip with
    | Some ip -> "for=" ^ forwarded_node ip ^ ";" ^ host
    | None -> host
  in
  let added = [ ("Forwarded", append headers "forwarded" forwarded) ] in
  let added =
    match host with Some h -> ("X-Forwarded-Host", h) :: added | None -> added
  in
  let added = ("X-Forwarded-Proto", proto) :: added in
  let added =
    match ip with
    | Some ip ->
        ("X-Forwarded-For", append headers "x-forwarded-for" ip) :: added
    | None -> added
  in
  (("Host", host_field) :: end_to_end ~also:replaced_in_request headers) @ added

let matches ~prefix path =
  let prefix =
    if String.length prefix > 1 && prefix.[String.length prefix - 1] = '/' then
      String.sub prefix 0 (String.length prefix - 1)
    else prefix
  in
  prefix = "/"
  || String.starts_with ~prefix path
     && (String.length path = String.length prefix
        || path.[String.length prefix] = '/')

let upstream_url (u : upstream) ~prefix (r : Handler.request) =
  let target =
    if u.url.path = "/" then r.head.target
    else
      let base =
        let p = u.url.path in
        if p.[String.length p - 1] = '/' then
          String.sub p 0 (String.length p - 1)
        else p
      in
      let prefix =
        if prefix <> "/" && prefix.[String.length prefix - 1] = '/' then
          String.sub prefix 0 (String.length prefix - 1)
        else if prefix = "/" then ""
        else prefix
      in
      let rest =
        let t = r.head.target in
        if String.starts_with ~prefix t then
          String.sub t (String.length prefix)
            (String.length t - String.length prefix)
        else t
      in
      let rest = if rest = "" || rest.[0] = '?' then "/" ^ rest else rest in
      base ^ rest
  in
  (* The upstream's origin as parsed once: only the target is looked at. *)
  C.Url.with_target u.url target

(* {1 Forwarding} *)

(* A buffer of 16 KiB is allocated outside the minor heap, which costs a
   small response more than the rest of its relaying: one no larger than
   the body it carries. *)
let buffer_for ~length =
  Bytes.create
    (match length with Some n when n < 16384 -> max n 1 | _ -> 16384)

exception Request_body of Braid_http.Parse_error.t

let pump_request ~length (body : Body.t) write =
  let buf = buffer_for ~length in
  let size = Bytes.length buf in
  let rec go () =
    match Body.read body buf 0 size with
    | Ok 0 -> ()
    | Ok n ->
        write buf 0 n;
        go ()
    | Error e -> raise (Request_body e)
  in
  go ()

exception Upstream_cut of string

(* What an upstream's response holds (its connection, its pool slot, its
   count in [active]), given back once: by the stream when it ends, or by
   the end of the exchange if the stream never runs (Handler.at_end). Both
   run in the connection's fiber. *)
let releaser upstream response =
  let held = ref true in
  fun () ->
    if !held then (
      held := false;
      C.Response.close response;
      Atomic.decr upstream.active)

let stream_response response ~release (w : Response.Writer.t) =
  let write buf off len = Response.Writer.write_bytes w buf off len in
  Fun.protect ~finally:release (fun () ->
      match
        C.Response.pipe
          ~flush:(fun () -> Response.Writer.flush w)
          response write
      with
      | Ok () -> ()
      | Error e -> raise (Upstream_cut (C.Error.to_string e)))

let is_idempotent : Braid_http.Method.t -> bool = function
  | GET | HEAD | OPTIONS | TRACE | PUT | DELETE -> true
  | POST | PATCH | CONNECT -> false

let gateway_error (e : C.Error.t) =
  match e with
  | Timeout _ -> Response.error 504 (C.Error.to_string e)
  | _ -> Response.error 502 (C.Error.to_string e)

(* A HEAD's answer has no body, so the parser leaves its Content-Length
   unchecked: the length it would have, if it is one. *)
let declared_length headers =
  match Headers.find_all headers "content-length" with
  | [] -> None
  | first :: rest ->
      let digits s =
        let s = String.trim s in
        s <> ""
        && String.length s <= 18
        && String.for_all (fun c -> c >= '0' && c <= '9') s
      in
      if
        digits first
        && List.for_all (fun v -> String.trim v = String.trim first) rest
      then Some (int_of_string (String.trim first))
      else None

(* {2 Switching protocols} *)

(* The protocols a request asks to switch to (its Upgrade fields), if it
   asks: HTTP/1.1, with "upgrade" among its connection options. *)
let upgrade_asked (r : Handler.request) =
  if
    r.head.version = Http_1_1
    && Headers.has_token r.head.headers "connection" "upgrade"
  then
    match Headers.find_all r.head.headers "upgrade" with
    | [] -> None
    | fields -> Some (String.concat ", " fields)
  else None

(* Bytes from one side to the other until [read] says the stream ended. *)
let copy ~read ~write =
  let buf = Bytes.create 16384 in
  let rec go () =
    match read buf 0 16384 with
    | 0 -> ()
    | n ->
        write buf 0 n;
        go ()
  in
  try go () with Braid_io.Io_error _ | Upgraded.Shutdown -> ()

(* Both directions at once; the first to end ends the other (WebSocket,
   like most upgraded protocols, has no half-closed state to keep). A
   graceful shutdown of the server ends the client's side, so both. *)
let relay (client : Upgraded.t) upstream =
  ignore
    (Braid.Switch.run_stoppable (fun sw ->
         let direction ~read ~write =
           ignore
             (Braid.Switch.fork sw (fun () ->
                  copy ~read ~write;
                  Braid.Switch.stop sw))
         in
         direction ~read:(Upgraded.read client)
           ~write:(C.Switched.write_bytes upstream);
         direction ~read:(C.Switched.read upstream)
           ~write:(Upgraded.write_bytes client)))

(* The upstream's 101: the client gets it (its end-to-end fields, as
   Sec-WebSocket-Accept) and the two connections are relayed, if the
   upstream chose a protocol the client offered. *)
let switch (r : Handler.request) response ~headers ~release =
  let offered = Option.value (upgrade_asked r) ~default:"" in
  let chosen = Option.map String.trim (C.Response.header response "upgrade") in
  match chosen with
  | Some protocol when protocol <> "" && Headers.list_has_token offered protocol
    -> (
      match Response.upgrade ~headers ~protocol ignore with
      | exception Invalid_argument _ ->
          release ();
          Response.error 502 "upstream switched to a malformed protocol"
      | _ ->
          let upstream = C.Response.switch response in
          let close () =
            C.Switched.close upstream;
            release ()
          in
          (* Until the server runs the relay, the exchange's end closes the
             upstream side (Handler.at_end, as for a stream). *)
          Handler.at_end r close;
          Response.upgrade ~headers ~protocol (fun client ->
              Fun.protect ~finally:close (fun () -> relay client upstream)))
  | _ ->
      release ();
      Response.error 502 "upstream switched to a protocol not asked for"

(* The response's fields the server writes itself. *)
let replaced_in_response name =
  match String.length name with
  | 4 -> Headers.equal_name name "date"
  | 14 -> Headers.equal_name name "content-length"
  | _ -> false

let respond (r : Handler.request) response ~release =
  let status = C.Response.status response in
  let head = C.Response.head response in
  let headers = end_to_end ~also:replaced_in_response head.headers in
  if status = 101 then switch r response ~headers ~release
  else
    match head.body with
    | No_body
      when r.head.meth = HEAD && not (Braid_http.Status.has_no_body status) ->
        (* The fields a GET would get, Content-Length or chunked coding: the
           server does not run the stream of a HEAD's answer. *)
        release ();
        Response.make ~headers
          ?stream_length:(declared_length head.headers)
          status (Stream ignore)
    | No_body ->
        release ();
        Response.make ~headers status Empty
    | Content_length n ->
        Response.make ~headers ~stream_length:n status
          (Stream (stream_response response ~release))
    | Chunked | Until_close ->
        Response.make ~headers status
          (Stream (stream_response response ~release))

let handler t ~prefix (r : Handler.request) =
  let set = Atomic.get t.set in
  let meth = r.head.meth in
  let has_body = r.head.body <> No_body in
  let body () =
    match r.head.body with
    | No_body -> C.Body.empty
    | Content_length n ->
        C.Body.stream ~length:n (pump_request ~length:(Some n) r.body)
    | Chunked -> C.Body.stream (pump_request ~length:None r.body)
  in
  let upgrade = upgrade_asked r in
  let may_retry e =
    C.Error.nothing_sent e || (is_idempotent meth && not has_body)
  in
  let rec attempt ~tried ~left last_error =
    match pick t set ~tried with
    | None -> (
        match last_error with
        | Some e -> gateway_error e
        | None -> Response.error 502 "no upstream")
    | Some u -> (
        Atomic.incr u.active;
        match
          match upstream_url u ~prefix r with
          | Error m -> Error (C.Error.Bad_url m)
          | Ok url ->
              C.send_url t.client
                ~headers:(request_headers t set u r)
                ~body:(body ()) ?upgrade meth url
        with
        | Ok response ->
            succeeded u;
            let release = releaser u response in
            (* The stream may never run: a HEAD, a middleware that answers
               something else, a connection lost before the head. *)
            Handler.at_end r release;
            respond r response ~release
        | Error e ->
            Atomic.decr u.active;
            (match e with Bad_url _ | Bad_request _ -> () | _ -> failed set u);
            if left > 0 && may_retry e then
              attempt ~tried:(u :: tried) ~left:(left - 1) (Some e)
            else gateway_error e
        | exception Request_body e ->
            Atomic.decr u.active;
            Handler.bad_request e
        | exception ex ->
            Atomic.decr u.active;
            raise ex)
  in
  attempt ~tried:[] ~left:set.config.retries None

let middleware ~prefix t next (r : Handler.request) =
  if matches ~prefix r.path then handler t ~prefix r else next r

(* {1 Active health checks} *)

let check_url (u : upstream) path =
  let scheme = match u.url.scheme with Http -> "http" | Https -> "https" in
  Printf.sprintf "%s://%s%s" scheme (C.Url.authority u.url) path

(* One GET of the path: a 2xx or 3xx within the timeout passes. The
   response's body is read (a small one) so the connection stays usable. *)
let passes client (u : upstream) (hc : health_check) =
  match
    Braid_io.Time.timeout hc.timeout (fun () ->
        C.request client GET (check_url u hc.path) (fun r ->
            ignore (C.Response.to_string ~max:65536 r);
            C.Response.status r))
  with
  | Some (Ok status) -> status >= 200 && status < 400
  | Some (Error _) | None -> false

let record (u : upstream) ~passed =
  if passed then (
    if Atomic.exchange u.failed_check false then (
      (* Restored: passive ejection is forgiven too. *)
      Atomic.set u.fails 0;
      Atomic.set u.down_until 0))
  else Atomic.set u.failed_check true

let check_health ?client t =
  Braid.Switch.run @@ fun sw ->
  let client =
    match client with
    | Some c -> c
    | None -> C.create ~sw ~config:client_config ()
  in
  let rec round () =
    let set = Atomic.get t.set in
    match set.config.health_check with
    | None ->
        (* Checks may be turned on by an update. *)
        Braid_io.Time.sleep 1.;
        round ()
    | Some hc ->
        (* Every upstream at once: a slow one does not delay the others'
           verdicts. *)
        Braid.Switch.run (fun checks ->
            Array.iter
              (fun u ->
                ignore
                  (Braid.Switch.fork checks (fun () ->
                       record u ~passed:(passes client u hc))))
              set.upstreams);
        Braid_io.Time.sleep hc.interval;
        round ()
  in
  round ()

module Table = struct
  type proxy = t
  type t = (string * proxy) list Atomic.t

  let create () = Atomic.make []

  let set t routes =
    (* Longest prefix first, so the most specific one wins. *)
    Atomic.set t
      (List.stable_sort
         (fun (a, _) (b, _) -> compare (String.length b) (String.length a))
         routes)

  let get t = Atomic.get t

  let middleware t next (r : Handler.request) =
    match
      List.find_opt (fun (prefix, _) -> matches ~prefix r.path) (Atomic.get t)
    with
    | Some (prefix, proxy) -> handler proxy ~prefix r
    | None -> next r

  (* One checking fiber per proxy in the table, started and stopped as
     the table changes. *)
  let check_health ?client t =
    Braid.Switch.run @@ fun sw ->
    let client =
      match client with
      | Some c -> c
      | None -> C.create ~sw ~config:client_config ()
    in
    let rec watch running =
      let proxies = List.map snd (Atomic.get t) in
      let kept, gone =
        List.partition (fun (p, _) -> List.memq p proxies) running
      in
      List.iter (fun (_, fiber) -> Braid.Fiber.cancel fiber) gone;
      let added =
        List.filter_map
          (fun p ->
            if List.mem_assq p kept then None
            else
              Some (p, Braid.Switch.fork sw (fun () -> check_health ~client p)))
          proxies
      in
      Braid_io.Time.sleep 1.;
      watch (added @ kept)
    in
    watch []
end
