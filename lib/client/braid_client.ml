open Braid_http
module Url = Url
module Time = Braid_io.Time

module Error = struct
  type phase = Connect | First_byte | Read | Whole_request

  type t =
    | Bad_url of string
    | Bad_request of string
    | Unknown_host of string
    | Connect_failed of string
    | Tls_failed of string
    | Timeout of phase
    | Connection_lost of string
    | Bad_response of Parse_error.t
    | Too_many_redirects of int

  let phase_name = function
    | Connect -> "connect"
    | First_byte -> "first byte"
    | Read -> "read"
    | Whole_request -> "whole request"

  let to_string = function
    | Bad_url m -> "bad URL: " ^ m
    | Bad_request m -> "bad request: " ^ m
    | Unknown_host h -> "unknown host " ^ h
    | Connect_failed m -> "connect failed: " ^ m
    | Tls_failed m -> "TLS failed: " ^ m
    | Timeout p -> phase_name p ^ " timeout"
    | Connection_lost m -> "connection lost: " ^ m
    | Bad_response e -> "bad response: " ^ e.reason
    | Too_many_redirects n -> Printf.sprintf "too many redirects (%d)" n

  let pp ppf e = Format.pp_print_string ppf (to_string e)

  let nothing_sent = function
    | Bad_url _ | Bad_request _ | Unknown_host _ | Connect_failed _
    | Tls_failed _
    | Timeout Connect ->
        true
    | Timeout (First_byte | Read | Whole_request)
    | Connection_lost _ | Bad_response _ | Too_many_redirects _ ->
        false
end

type redirects = Never | Follow of int

type config = {
  connect_timeout : float;
  first_byte_timeout : float option;
  read_timeout : float option;
  request_timeout : float option;
  max_connections : int;
  max_idle : int;
  idle_timeout : float;
  redirects : redirects;
  limits : Limits.t;
  tls : Braid_tls.Client_context.t option;
}

let default_config =
  {
    connect_timeout = 10.;
    first_byte_timeout = Some 30.;
    read_timeout = Some 30.;
    request_timeout = None;
    max_connections = 64;
    max_idle = 16;
    idle_timeout = 30.;
    redirects = Follow 5;
    limits = { Limits.default with max_body = max_int };
    tls = None;
  }

module Body = struct
  type t =
    | Empty
    | Fixed of string
    | Stream of {
        length : int option;
        produce : (bytes -> int -> int -> unit) -> unit;
      }

  let empty = Empty
  let string s = Fixed s
  let stream ?length produce = Stream { length; produce }
  let replayable = function Empty | Fixed _ -> true | Stream _ -> false
end

(* {1 Responses} *)

type state =
  | Open
  | Finished
  | Closed
  | Switched  (** A [101]'s connection, taken by {!Response.switch}. *)

(* A body of known length is read here, not by Response_body: once the bytes
   that came with the head are taken, the rest is read from the socket
   straight into the caller's buffer (one copy fewer than through the
   connection's input buffer, and pieces as large as the caller's). *)
type sized = { mutable remaining : int }
type body = Sized of sized | Framed of Response_body.t

type response = {
  head : Response_head.t;
  url : Url.t;
  body : body;
  connection : Connection.t;
  lease : Pool.lease;
  read_timeout : float option;
  deadline : int option;  (** Monotonic ns, for the whole request. *)
  mutable state : state;
}

let now_ns = Time.now_ns

(* Runs [f] within the phase's own limit and what is left of the whole
   request's, and says which ran out. *)
let within ~deadline phase limit f =
  let budget, phase =
    match deadline with
    | None -> (limit, phase)
    | Some d -> (
        let left = Float.of_int (d - now_ns ()) /. 1e9 in
        match limit with
        | Some l when l <= left -> (Some l, phase)
        | _ -> (Some (Float.max left 0.), Error.Whole_request))
  in
  match budget with
  | None -> Ok (f ())
  | Some seconds -> (
      match Time.timeout seconds f with
      | Some v -> Ok v
      | None -> Error (Error.Timeout phase))

let io_message e =
  match Braid_io.error_message e with
  | Some m -> m
  | None -> Printexc.to_string e

(* The connection is done with: back to the pool if the exchange left it
   clean, else closed. Either way the lease's slot is free again. *)
let finish r =
  if r.state = Open then (
    r.state <- Finished;
    Pool.release r.lease (if r.head.keep_alive then Some r.connection else None);
    if not r.head.keep_alive then Connection.close r.connection)

let abort r =
  if r.state = Open then (
    r.state <- Closed;
    Connection.close r.connection;
    Pool.release r.lease None)

module Response = struct
  type t = response

  let status r = r.head.status
  let headers r = r.head.headers
  let header r name = Headers.find r.head.headers name
  let head r = r.head
  let url r = r.url

  let trailers r =
    match r.body with
    | Framed b -> Response_body.trailers b
    | Sized _ -> Headers.empty

  let truncated =
    { Parse_error.status = 502; reason = "body truncated"; close = true }

  (* Bytes of the input's window, which hold no more than the body's. *)
  let take_buffered r (s : body) buf off len =
    match s with
    | Framed _ -> 0
    | Sized s ->
        let input = Connection.input r.connection in
        let n = Int.min (Int.min len s.remaining) (Input.length input) in
        if n > 0 then (
          Bytes.blit input.buf input.pos buf off n;
          Input.consume input n;
          s.remaining <- s.remaining - n);
        n

  let read_body r buf off len =
    match r.body with
    | Framed b -> Response_body.read b buf off len
    | Sized s ->
        if s.remaining = 0 then Ok 0
        else
          let n = take_buffered r r.body buf off len in
          if n > 0 then Ok n
          else
            let n =
              Connection.read_socket r.connection buf off
                (Int.min len s.remaining)
            in
            if n = 0 then Error truncated
            else (
              s.remaining <- s.remaining - n;
              Ok n)

  let body_finished r =
    match r.body with
    | Framed b -> Response_body.is_finished b
    | Sized s -> s.remaining = 0

  let read r buf off len =
    if len <= 0 || off < 0 || off > Bytes.length buf - len then
      invalid_arg "Braid_client.Response.read";
    match r.state with
    | Closed -> invalid_arg "Braid_client.Response.read: closed"
    | Switched -> invalid_arg "Braid_client.Response.read: switched"
    | Finished -> Ok 0
    | Open -> (
        match
          (* Bytes already in memory need no timer. *)
          let n = take_buffered r r.body buf off len in
          if n > 0 then Ok (Ok n)
          else
            within ~deadline:r.deadline Read r.read_timeout (fun () ->
                read_body r buf off len)
        with
        | Ok (Ok n) ->
            if n = 0 || body_finished r then finish r;
            Ok n
        | Ok (Error e) ->
            abort r;
            Error (Error.Bad_response e)
        | Error _ as timeout ->
            abort r;
            timeout
        | exception (Braid_io.Io_error _ as e) ->
            abort r;
            Error (Error.Connection_lost (io_message e))
        | exception e ->
            abort r;
            raise e)

  let to_string ?(max = 16 * 1024 * 1024) r =
    let out = Buffer.create 4096 and chunk = Bytes.create 16384 in
    let rec loop () =
      match read r chunk 0 (Bytes.length chunk) with
      | Ok 0 -> Ok (Buffer.contents out)
      | Ok n ->
          if Buffer.length out + n > max then (
            abort r;
            Error
              (Error.Bad_response
                 {
                   status = 502;
                   reason = Printf.sprintf "body above %d bytes" max;
                   close = true;
                 }))
          else (
            Buffer.add_subbytes out chunk 0 n;
            loop ())
      | Error _ as e -> e
    in
    if r.state = Closed || r.state = Switched then
      invalid_arg "Braid_client.Response.to_string: closed";
    loop ()

  let close r = abort r

  (* The upstream's read failed, as opposed to the caller's write. *)
  exception Read_failed of string

  (* Gathers into [buf] from [filled] what can be had without waiting: the
     window's bytes, then the socket's if the loop saw some arrive. *)
  let rec gather r s buf filled =
    if filled = Bytes.length buf || s.remaining = 0 then filled
    else
      let n =
        take_buffered r (Sized s) buf filled (Bytes.length buf - filled)
      in
      if n > 0 then gather r s buf (filled + n)
      else
        let want = Int.min (Bytes.length buf - filled) s.remaining in
        match Connection.read_now r.connection buf filled want with
        | exception (Braid_io.Io_error _ as e) ->
            raise (Read_failed (io_message e))
        | -1 -> filled
        | 0 -> filled (* the end of the stream: the next read says so *)
        | n ->
            s.remaining <- s.remaining - n;
            gather r s buf (filled + n)

  let pipe_sized r s write =
    let input = Connection.input r.connection in
    (* The window is the head's; a body larger than what came with it is
       gathered in a buffer of the loop's, taken at the first need. *)
    let held = ref None in
    let buffer () =
      match !held with
      | Some b -> b
      | None ->
          let b = Pool.take_buffer r.lease in
          held := Some b;
          b
    in
    let rec go () =
      if s.remaining = 0 then (
        finish r;
        Ok ())
      else
        let available = Input.length input in
        if
          available >= s.remaining
          || (available > 0 && not (Connection.may_have_input r.connection))
        then (
          (* All of it, or all there is for now, is in the window: written
             from there, no copy. *)
          let n = Int.min available s.remaining in
          let at = input.pos in
          write input.buf at n;
          Input.consume input n;
          s.remaining <- s.remaining - n;
          go ())
        else
          let buf = buffer () in
          let filled = gather r s buf 0 in
          if filled > 0 then (
            write buf 0 filled;
            go ())
          else
            match
              within ~deadline:r.deadline Read r.read_timeout (fun () ->
                  try read_body r buf 0 (Bytes.length buf)
                  with Braid_io.Io_error _ as e ->
                    raise (Read_failed (io_message e)))
            with
            | Ok (Ok n) ->
                write buf 0 n;
                go ()
            | Ok (Error e) ->
                abort r;
                Error (Error.Bad_response e)
            | Error _ as timeout ->
                abort r;
                timeout
    in
    let give_back () = Option.iter (Pool.give_buffer r.lease) !held in
    match go () with
    | result ->
        give_back ();
        result
    | exception Read_failed m ->
        (* A write's failure, on the other hand, leaves the response open:
           it is the caller's to close. *)
        give_back ();
        abort r;
        Error (Error.Connection_lost m)
    | exception e ->
        give_back ();
        raise e

  let pipe ?(flush = ignore) r write =
    match r.state with
    | Closed -> invalid_arg "Braid_client.Response.pipe: closed"
    | Switched -> invalid_arg "Braid_client.Response.pipe: switched"
    | Finished -> Ok ()
    | Open ->
        (* Whatever [write] holds goes out before the server is waited for,
           however deep in the parsing of a chunk the wait comes. *)
        Connection.set_before_wait r.connection flush;
        Fun.protect
          ~finally:(fun () -> Connection.set_before_wait r.connection ignore)
          (fun () ->
            match r.body with
            | Sized s -> pipe_sized r s write
            | Framed _ ->
                let buf = Pool.take_buffer r.lease in
                let rec go () =
                  match read r buf 0 (Bytes.length buf) with
                  | Ok 0 -> Ok ()
                  | Ok n ->
                      write buf 0 n;
                      go ()
                  | Error _ as e -> e
                in
                let result = go () in
                Pool.give_buffer r.lease buf;
                result)

  let switch r =
    if r.head.status <> 101 || r.state <> Open then
      invalid_arg "Braid_client.Response.switch: not an open 101 response";
    r.state <- Switched;
    (* The connection leaves the pool for good: its slot is free for the
       pool's next request. *)
    Pool.release r.lease None;
    r.connection
end

module Switched = struct
  type t = Connection.t

  let read t buf off len =
    if len <= 0 || off < 0 || off > Bytes.length buf - len then
      invalid_arg "Braid_client.Switched.read";
    Connection.read t buf off len

  let write = Connection.write

  let write_bytes t buf off len =
    if len < 0 || off < 0 || off > Bytes.length buf - len then
      invalid_arg "Braid_client.Switched.write_bytes";
    if len > 0 then Connection.write_bytes t buf off len

  let close = Connection.close
end

(* {1 Clients} *)

type t = {
  sw : Braid.Switch.t;
  config : config;
  pool : Pool.t;
  tls_lock : Mutex.t;
  mutable tls : Braid_tls.Client_context.t option;
      (** The default context, made at the first [https] request: loading the
          system's certificates takes milliseconds a plain client need not
          spend. *)
}

let create ~sw ?(config = default_config) () =
  {
    sw;
    config;
    pool =
      Pool.create ~max_active:config.max_connections ~max_idle:config.max_idle
        ~idle_timeout:config.idle_timeout;
    tls_lock = Mutex.create ();
    tls = config.tls;
  }

let tls_context t =
  Mutex.protect t.tls_lock (fun () ->
      match t.tls with
      | Some c -> c
      | None -> (
          match Braid_tls.Client_context.create () with
          | Ok c ->
              t.tls <- Some c;
              c
          | Error m ->
              raise
                (Braid_io.Io_error
                   { op = "handshake"; error = Braid_tls.eproto; detail = m })))

let close_idle t = Pool.close_idle t.pool

(* Fields the client frames itself, or that belong to one connection. *)
let is_managed name =
  Headers.is_hop_by_hop name
  || (String.length name = 14 && Headers.equal_name name "content-length")

let content_length b n =
  Buffer.add_string b "Content-Length: ";
  Buffer.add_string b (string_of_int n);
  Buffer.add_string b "\r\n"

let request_head ~upgrade meth (url : Url.t) headers (body : Body.t) =
  let b = Buffer.create 256 in
  Buffer.add_string b (Method.to_string meth);
  Buffer.add_char b ' ';
  Buffer.add_string b (Url.target url);
  Buffer.add_string b " HTTP/1.1\r\n";
  if not (List.exists (fun (n, _) -> Headers.equal_name n "host") headers) then (
    Buffer.add_string b "Host: ";
    Buffer.add_string b (Url.authority url);
    Buffer.add_string b "\r\n");
  let bad =
    List.find_map
      (fun (name, value) ->
        if not (Headers.is_name name) then
          Some (Printf.sprintf "field name %S is not a token" name)
        else if not (Headers.is_value value) then
          Some (Printf.sprintf "field %s: value holds a control character" name)
        else (
          if not (is_managed name) then (
            Buffer.add_string b name;
            Buffer.add_string b ": ";
            Buffer.add_string b value;
            Buffer.add_string b "\r\n");
          None))
      headers
  in
  let bad =
    match upgrade with
    | None -> bad
    | Some protocols ->
        if (not (Headers.is_value protocols)) || String.trim protocols = "" then
          Some "upgrade: not a field value"
        else (
          Buffer.add_string b "Upgrade: ";
          Buffer.add_string b protocols;
          Buffer.add_string b "\r\nConnection: Upgrade\r\n";
          bad)
  in
  (match body with
  | Empty -> (
      match meth with
      | POST | PUT | PATCH -> Buffer.add_string b "Content-Length: 0\r\n"
      | _ -> ())
  | Fixed s -> content_length b (String.length s)
  | Stream { length = Some n; _ } -> content_length b n
  | Stream { length = None; _ } ->
      Buffer.add_string b "Transfer-Encoding: chunked\r\n");
  Buffer.add_string b "\r\n";
  match bad with Some m -> Error m | None -> Ok (Buffer.contents b)

exception Wrong_length of int

(* Sends the body after the head; a stream without a length goes chunked. *)
let send_body connection (body : Body.t) =
  match body with
  | Empty -> ()
  | Fixed s -> if s <> "" then Connection.write connection s
  | Stream { length = Some n; produce } ->
      let sent = ref 0 in
      produce (fun buf off len ->
          if off < 0 || len < 0 || off > Bytes.length buf - len then
            invalid_arg "Braid_client.Body.stream: write";
          if !sent + len > n then raise (Wrong_length (!sent + len));
          sent := !sent + len;
          if len > 0 then Connection.write_bytes connection buf off len);
      if !sent <> n then raise (Wrong_length !sent)
  | Stream { length = None; produce } ->
      produce (fun buf off len ->
          if off < 0 || len < 0 || off > Bytes.length buf - len then
            invalid_arg "Braid_client.Body.stream: write";
          if len > 0 then (
            Connection.write connection (Printf.sprintf "%x\r\n" len);
            Connection.write_bytes connection buf off len;
            Connection.write connection "\r\n"));
      Connection.write connection "0\r\n\r\n"

type failure = Failed of Error.t | Stale of Error.t

(* One request on one connection, up to the response head. On failure the
   connection is closed and the lease given back; [Stale] marks a reused
   connection that failed before any byte of a response. *)
let exchange t ~lease ~connection ~reused ~deadline ~upgrading meth url head
    body =
  let fail e =
    Connection.close connection;
    Pool.release lease None;
    if reused then Stale e else Failed e
  in
  match
    Connection.count_request connection;
    let sent =
      within ~deadline Whole_request None (fun () ->
          Connection.write connection head;
          send_body connection body)
    in
    match sent with
    | Error e -> Error (Failed e)
    | Ok () -> (
        let input = Connection.input connection in
        let rec final_head () =
          match Response_parser.read_response ~meth input t.config.limits with
          | Ok h when Response_head.is_interim h -> final_head ()
          | r -> r
        in
        match
          within ~deadline First_byte t.config.first_byte_timeout final_head
        with
        | Error e -> Error (Failed e)
        | Ok (Error Eof) ->
            Error (fail (Connection_lost "closed before responding"))
        | Ok (Error (Invalid e)) -> Error (Failed (Bad_response e))
        | Ok (Ok head) when head.status = 101 && not upgrading ->
            Error
              (Failed
                 (Bad_response
                    {
                      status = 502;
                      reason = "101 to a request that asked for no upgrade";
                      close = true;
                    }))
        | Ok (Ok head) ->
            let r =
              {
                head;
                url;
                body =
                  (match head.body with
                  | Content_length n when n <= t.config.limits.max_body ->
                      Sized { remaining = n }
                  | framing ->
                      Framed
                        (Response_body.create input t.config.limits framing));
                connection;
                lease;
                read_timeout = t.config.read_timeout;
                deadline;
                state = Open;
              }
            in
            (* A 101's connection is the caller's to take, not the pool's. *)
            if head.body = No_body && head.status <> 101 then finish r;
            Ok r)
  with
  | Ok r -> Ok r
  | Error (Stale _ as s) -> Error s
  | Error (Failed e) ->
      Connection.close connection;
      Pool.release lease None;
      Error (Failed e)
  | exception (Braid_io.Io_error _ as e) ->
      Error (fail (Connection_lost (io_message e)))
  | exception Wrong_length n ->
      Connection.close connection;
      Pool.release lease None;
      Error
        (Failed
           (Connection_lost
              (Printf.sprintf
                 "the body stream produced %d bytes, not the length given" n)))
  | exception e ->
      Connection.close connection;
      Pool.release lease None;
      raise e

let connect_error (e : exn) : Error.t =
  match e with
  | Braid_io.Net.Unknown_host h -> Unknown_host h
  | Braid_io.Io_error { error; detail; _ } when error = Braid_tls.eproto ->
      Tls_failed detail
  | e -> Connect_failed (io_message e)

let open_connection t ~deadline (url : Url.t) =
  match
    within ~deadline Connect (Some t.config.connect_timeout) (fun () ->
        Connection.connect ~sw:t.sw ~tls:(lazy (tls_context t)) url)
  with
  | Ok c -> Ok c
  | Error e -> Error e
  | exception ((Braid_io.Io_error _ | Braid_io.Net.Unknown_host _) as e) ->
      Error (connect_error e)

(* One request to [url], on a pooled connection or a new one. *)
let one t ~deadline ~upgrade meth (url : Url.t) headers body =
  let upgrading = upgrade <> None in
  match request_head ~upgrade meth url headers body with
  | Error m -> Error (Error.Bad_request m)
  | Ok head -> (
      let lease = Pool.acquire t.pool (Url.origin url) in
      let fresh () =
        match open_connection t ~deadline url with
        | Error e ->
            Pool.release lease None;
            Error e
        | Ok connection -> (
            match
              exchange t ~lease ~connection ~reused:false ~deadline ~upgrading
                meth url head body
            with
            | Ok r -> Ok r
            | Error (Failed e | Stale e) -> Error e)
        | exception e ->
            Pool.release lease None;
            raise e
      in
      match Pool.checkout lease with
      | None -> fresh ()
      | Some connection -> (
          match
            exchange t ~lease ~connection ~reused:true ~deadline ~upgrading meth
              url head body
          with
          | Ok r -> Ok r
          | Error (Failed e) -> Error e
          | Error (Stale e) ->
              if Body.replayable body then
                (* The lease was given back with the dead connection. *)
                let lease' = Pool.acquire t.pool (Url.origin url) in
                let retry () =
                  match open_connection t ~deadline url with
                  | Error e ->
                      Pool.release lease' None;
                      Error e
                  | Ok connection -> (
                      match
                        exchange t ~lease:lease' ~connection ~reused:false
                          ~deadline ~upgrading meth url head body
                      with
                      | Ok r -> Ok r
                      | Error (Failed e | Stale e) -> Error e)
                  | exception e ->
                      Pool.release lease' None;
                      raise e
                in
                retry ()
              else Error e))

let is_redirect = function 301 | 302 | 303 | 307 | 308 -> true | _ -> false
let credentials = [ "authorization"; "cookie"; "proxy-authorization" ]

(* A redirect's own body is dropped: read if it is small and already
   coming, else the connection is closed. *)
let discard r =
  let buf = Bytes.create 4096 in
  let rec loop budget =
    if budget <= 0 then Response.close r
    else
      match Response.read r buf 0 4096 with
      | Ok 0 -> ()
      | Ok n -> loop (budget - n)
      | Error _ -> ()
  in
  match r.state with Open -> loop 65536 | Finished | Closed | Switched -> ()

let rec follow t ~hops ~deadline ~upgrade meth (url : Url.t) headers body =
  match one t ~deadline ~upgrade meth url headers body with
  | Error _ as e -> e
  | Ok r -> (
      match (t.config.redirects, Response.header r "location") with
      | Follow max, Some location when is_redirect r.head.status -> (
          match Url.resolve url location with
          | Error m ->
              Response.close r;
              Error (Error.Bad_url m)
          | Ok next -> (
              let downgrade = url.scheme = Https && next.scheme = Http in
              let again =
                match r.head.status with
                | 303 ->
                    Some
                      ( (if meth = Method.HEAD then Method.HEAD else GET),
                        Body.Empty )
                | (301 | 302) when meth = POST -> Some (GET, Body.Empty)
                | _ -> if Body.replayable body then Some (meth, body) else None
              in
              match again with
              | _ when downgrade -> Ok r
              | None -> Ok r
              | Some _ when hops >= max ->
                  Response.close r;
                  Error (Too_many_redirects hops)
              | Some (meth', body') ->
                  discard r;
                  let headers =
                    if Url.origin next = Url.origin url then headers
                    else
                      List.filter
                        (fun (n, _) ->
                          not (List.exists (Headers.equal_name n) credentials))
                        headers
                  in
                  let headers =
                    if body' = Body.Empty && body <> Body.Empty then
                      List.filter
                        (fun (n, _) ->
                          not (Headers.equal_name n "content-type"))
                        headers
                    else headers
                  in
                  follow t ~hops:(hops + 1) ~deadline ~upgrade meth' next
                    headers body'))
      | _ -> Ok r)

let in_loop () = Option.is_some (Braid_io.polls ())

let send_url t ?(headers = []) ?(body = Body.Empty) ?upgrade meth url =
  if not (in_loop ()) then
    invalid_arg "Braid_client.send: not in a fiber of a Braid_io loop";
  let deadline =
    match t.config.request_timeout with
    | None -> None
    | Some s -> Some (now_ns () + Float.to_int (s *. 1e9))
  in
  follow t ~hops:0 ~deadline ~upgrade meth url headers body

let send t ?headers ?body ?upgrade meth url =
  if not (in_loop ()) then
    invalid_arg "Braid_client.send: not in a fiber of a Braid_io loop";
  match Url.of_string url with
  | Error m -> Error (Error.Bad_url m)
  | Ok url -> send_url t ?headers ?body ?upgrade meth url

let scoped t ?headers ?body meth url f =
  match send t ?headers ?body meth url with
  | Error _ as e -> e
  | Ok r -> (
      match f r with
      | v ->
          Response.close r;
          Ok v
      | exception e ->
          Response.close r;
          raise e)

let request t ?headers ?body meth url f =
  if in_loop () then scoped t ?headers ?body meth url f
  else
    (* A pool task or a bare thread: a loop of its own for this exchange,
       on a connection of its own (the loop's sockets end with it). *)
    Braid_io.run @@ fun () ->
    Braid.Switch.run @@ fun sw ->
    let local =
      {
        t with
        sw;
        pool =
          Pool.create ~max_active:t.config.max_connections ~max_idle:0
            ~idle_timeout:0.;
        tls_lock = Mutex.create ();
        tls = Some (tls_context t);
      }
    in
    scoped local ?headers ?body meth url f

type whole = { status : int; headers : Headers.t; body : string }

let get t ?headers url =
  match
    request t ?headers GET url (fun r ->
        match Response.to_string r with
        | Ok body ->
            Ok { status = r.head.status; headers = r.head.headers; body }
        | Error e -> Error e)
  with
  | Ok (Ok w) -> Ok w
  | Ok (Error e) | Error e -> Error e
