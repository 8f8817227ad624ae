open Braid_web
open Braid_web.Private
open Braid_http

type outcome = Peer_closed | Server_closed | Parked

(* The most one write hands to the socket: a client that keeps reading
   finishes a piece within the send timeout, however large the response. *)
let send_piece = 65536

(* Serves one parsed request; [true] if the connection goes on. [fiber] is
   the calling fiber, if any, looked up once for all the requests of a
   [resume]. Called with the request's id bound ([loop]). *)
let rec exchange (c : Pipeline_state.t) ~fiber (req : Request.t) =
  let now = Head_cache.now c.dates c.services in
  let path, query = Url_path.split_target req.target in
  let response = Dispatch.answer c req ~now ~path ~query in
  let body = c.body in
  match response.body with
  | Upgrade { protocol; run } ->
      upgrade c ~fiber req ~now response body ~protocol run
  | Empty | String _ | Stream _ | File _ ->
      respond c ~fiber req ~now response body

and upgrade c ~fiber req ~now response body ~protocol run =
  if c.abandon_body then respond c ~fiber req ~now response body
  else if not (Protocol_switch.asked_for req protocol) then
    respond c ~fiber req ~now
      (Protocol_switch.refused c req ~time:now
         (Printf.sprintf "the request did not ask for %S" protocol))
      body
  else
    match Settlement.settle body with
    | Consumed ->
        Protocol_switch.run c req ~now ~protocol response run;
        false
    | Unread ->
        respond c ~fiber req ~now
          (Protocol_switch.refused c req ~time:now
             "the request's body was not read")
          body
    | Failed e ->
        respond c ~fiber req ~now
          (Dispatch.error_page c (Some req) (Handler.bad_request e))
          body

and respond (c : Pipeline_state.t) ~fiber (req : Request.t) ~now
    (response : Response.t) body =
  let is_stream = match response.body with Stream _ -> true | _ -> false in
  (* Settled before the head, so that the head tells the truth about the
     connection; a stream may read the body while it runs, so later. *)
  let response, body_ok =
    if c.abandon_body then (response, false)
    else if is_stream then (response, true)
    else
      match Settlement.settle body with
      | Consumed -> (response, true)
      | Unread -> (response, false)
      | Failed e ->
          (Dispatch.error_page c (Some req) (Handler.bad_request e), false)
  in
  let no_content = req.meth = HEAD || Status.has_no_body response.status in
  (* Opened before the head: a file gone meanwhile still gets an answer. *)
  let response, contents =
    match response.body with
    | File { path; info; _ } when not no_content -> (
        match c.services.open_file path info with
        | Ok contents -> (response, Some contents)
        | Error e ->
            (match e with
            | Failed why -> Pipeline_state.log_error c (path ^ ": " ^ why)
            | Not_found | Forbidden -> ());
            (Dispatch.error_page c (Some req) (Static.file_error e), None)
        | exception exn -> (Dispatch.failure c req ~time:now exn, None))
    | _ -> (response, None)
  in
  let sized = Option.is_some response.stream_length in
  let chunked = is_stream && (not sized) && req.version = Http_1_1 in
  let keep_alive =
    req.keep_alive && body_ok
    && (not (Atomic.get c.progress.draining))
    && (not (Response.wants_close response))
    && not (is_stream && (not sized) && (not chunked) && not no_content)
  in
  Framing.write_head c ~now ~status:response.status ~headers:response.headers
    (Framing.of_response response ~chunked)
    ~keep_alive ~version:req.version;
  let sent =
    if no_content then 0
    else
      match (response.body, contents) with
      | Empty, _ | File _, None | Upgrade _, _ -> 0
      | String s, _ ->
          Output.send c.out (Bytes.unsafe_of_string s) 0 (String.length s);
          String.length s
      | File { offset; length; _ }, Some contents ->
          Framing.write_file c contents ~offset ~length;
          length
      | Stream f, _ ->
          Framing.write_stream ?length:response.stream_length c req ~time:now f
            ~chunked
  in
  let keep_alive =
    keep_alive
    && ((not is_stream)
       || match Settlement.settle body with Consumed -> true | _ -> false)
  in
  c.services.log
    (Access
       {
         peer = c.peer;
         time = now;
         request = Some req;
         status = response.status;
         body_bytes = sent;
       });
  Dispatch.traced_end ~fiber ~status:response.status ~bytes:sent;
  keep_alive

(* The parser's 413 names its body limit's source; allocated once, not per
   request. *)
let server_source = Some Dispatch.server_limit
let largest_route_source = Some Dispatch.largest_route_limit

(* A request the parser refused; [true] if the connection goes on. *)
let reject (c : Pipeline_state.t) (e : Parse_error.t) =
  let keep_alive = (not e.close) && not (Atomic.get c.progress.draining) in
  let now = Head_cache.now c.dates c.services in
  let response =
    match Dispatch.error_page c None (Response.error e.status e.reason) with
    | { body = String _ | Empty; _ } as r -> r
    | _ ->
        (* Only a page in memory: nothing is read from the stream now. *)
        Response.error e.status e.reason
  in
  let text = match response.body with String s -> s | _ -> "" in
  Framing.write_head c ~now ~status:response.status ~headers:response.headers
    (Length (String.length text))
    ~keep_alive ~version:Http_1_1;
  Output.add_string c.out text;
  c.services.log
    (Access
       {
         peer = c.peer;
         time = now;
         request = None;
         status = response.status;
         body_bytes = String.length text;
       });
  keep_alive

let request_timeout =
  { Parse_error.status = 408; reason = "request timed out"; close = true }

let internal_error = { Parse_error.status = 500; reason = ""; close = true }

type first_bytes =
  | Http2_preface
  | Promised_http2  (** ALPN chose h2, and no preface came. *)
  | Http1

(* What a connection's first bytes are, when HTTP/2 is served: HTTP/2's
   preface (RFC 9113 §3.4: h2c by prior knowledge, or h2 chosen by ALPN
   over TLS, whose client sends the same preface), or anything else (an end
   of stream too) for the HTTP/1.1 parser, which answers what it cannot
   read as before (h2c must: a cleartext client may speak either), unless
   the client chose h2 by ALPN. Reads no more than the preface needs. *)
let rec first_bytes (c : Pipeline_state.t) =
  let input = c.input in
  match
    Braid_http2.Frame.check_preface input.buf input.pos (Input.length input)
  with
  | Preface -> Http2_preface
  | Not_preface -> Http1
  | Preface_so_far -> if Input.refill input > 0 then first_bytes c else Http1

(* The connection is HTTP/2's from here; the phase of [progress] is
   [Upgraded] (never idle, told of a drain), as for a protocol switch. *)
let http2 (c : Pipeline_state.t) =
  match Http2_connection.serve c with
  | Peer_gone -> Peer_closed
  | Ended_by_server -> Server_closed

(* The client chose h2 by ALPN and sent no preface (or too slowly): HTTP/2's
   connection error, not HTTP/1.1's 400 (RFC 9113 §3.4). *)
let not_http2 (c : Pipeline_state.t) =
  if Input.length c.input = 0 then Peer_closed
  else
    let goaway = Buffer.create 17 in
    Braid_http2.Frame.write goaway
      (Goaway { last_stream = 0; code = Protocol_error; debug = "" });
    c.upgraded_write (Buffer.to_bytes goaway) 0 (Buffer.length goaway);
    Server_closed

(* Pipelined responses wait in the buffer for the next read, but only up
   to its size: a flood of tiny pipelined requests must not grow it. *)
let next (c : Pipeline_state.t) =
  if Output.length c.out >= c.config.output_buffer then Output.flush c.out

(* What [loop] hands [Dispatch.with_request_id] to run: made once per
   [resume], not a closure per request. [serve ()] serves the request put in
   [current], and takes it out: an idle connection holds no request. *)
type turn = { mutable current : Request.t; serve : unit -> bool }

(* [current] between requests: never served. *)
let no_request : Request.t =
  {
    meth = GET;
    target = "/";
    target_form = Origin_form;
    version = Http_1_1;
    headers = Headers.empty;
    body = No_body;
    keep_alive = false;
    expect_continue = false;
  }

let turn c ~fiber =
  let rec t =
    {
      current = no_request;
      serve =
        (fun () ->
          let req = t.current in
          t.current <- no_request;
          exchange c ~fiber req);
    }
  in
  t

(* Before waiting for a request: out go the buffered responses. A draining
   server answers with [Connection: close] and ends the connection then; a
   connection reaching its wait while the server drains is one whose last
   response went out keep-alive just before the drain began, or a fresh one
   (accepted just before listening stopped). Either may have its client's
   request on the way, which closing it now would reset (and an HTTP/1.1
   client need not retry): it waits for it, the first as briefly as a
   connection idle when the drain began ([Progress.drain_grace]), the fresh
   one within its head's deadline. Connection.close_idle bounds both. *)
let rec loop (c : Pipeline_state.t) ~fiber ~turn =
  let progress = c.progress in
  if Input.length c.input = 0 then (
    Output.flush c.out;
    (* The first wait is bounded by the first request's deadline; a wait
       resumed after parking keeps the deadline it had. *)
    if not (progress.first || progress.parked) then (
      let now = c.services.monotonic_ns () in
      progress.idle_since <- now;
      progress.idle_deadline <-
        (now
        +
        if Atomic.get progress.draining then
          Int.min progress.keep_alive
            (Progress.ns_of_seconds Progress.drain_grace)
        else progress.keep_alive));
    progress.phase <- Idle)
  else progress.phase <- Head;
  (* Where the connection can tell when bytes arrive without reading
       them, it waits for them holding its buffers but not using them: the
       sweeper may take them back if the wait lasts (Progress.release). *)
  (match c.await_input with
  | Some _ when progress.parked ->
      (* It waited outside: bytes are there. *)
      progress.parked <- false
  | Some await when progress.phase = Idle -> (
      progress.idle_wait <- Awaiting;
      match await () with
      | () -> progress.idle_wait <- Not_waiting
      | exception e ->
          progress.idle_wait <- Not_waiting;
          raise e)
  | _ -> ());
  match
    if progress.first && c.config.http2.enabled then
      (* A preface left incomplete past the head's deadline: the parser
         reads on and answers the timeout. *)
      match try first_bytes c with Unwind.Timed_out -> Http1 with
      | Http1 when c.alpn () = Some "h2" -> Promised_http2
      | first -> first
    else Http1
  with
  | Http2_preface -> http2 c
  | Promised_http2 -> not_http2 c
  | Http1 -> (
      match
        Request_parser.read_request
          ?source:
            (if c.head_limits.max_body > c.config.limits.max_body then
               largest_route_source
             else server_source)
          c.input c.head_limits
      with
      | exception Unwind.Timed_out ->
          if progress.phase = Idle then Peer_closed
          else (
            ignore (reject c request_timeout);
            Server_closed)
      | Error Eof -> Peer_closed
      | Error (Invalid e) ->
          if reject c e then (
            next c;
            loop c ~fiber ~turn)
          else Server_closed
      | Ok req -> (
          progress.phase <- Body;
          progress.first <- false;
          progress.head_deadline <- 0;
          c.head_written <- false;
          c.abandon_body <- false;
          match
            turn.current <- req;
            match Dispatch.with_request_id ~fiber req turn.serve with
            | v ->
                Body.close c.body;
                Handler.Ending.run c.ending;
                v
            | exception e ->
                let bt = Printexc.get_raw_backtrace () in
                Body.close c.body;
                Handler.Ending.run c.ending;
                Printexc.raise_with_backtrace e bt
          with
          | true ->
              next c;
              loop c ~fiber ~turn
          | false ->
              (* The client that asked for the close sends nothing more
                 (RFC 9112 §9.6): if nothing of its is left unread, closing
                 cannot reset its response, and the caller need not linger.
                 Its body closed, [is_finished] still tells whether it was
                 read to its end. *)
              c.closed_as_asked <-
                (not req.keep_alive) && progress.phase <> Upgraded
                && (not c.abandon_body) && Body.is_finished c.body
                && Option.is_none (Body.failure c.body)
                && Input.length c.input = 0;
              Server_closed
          | exception Unwind.Timed_out ->
              (* A stalled body: answer if nothing was answered yet. *)
              if not c.head_written then ignore (reject c request_timeout);
              Server_closed
          | exception e when not (Unwind.is_connections_own e) ->
              (* A failure outside the handler's own call (the handler's is
               already a 500): the client still gets an answer. *)
              let backtrace = Printexc.get_raw_backtrace () in
              c.services.log
                (Handler_failed
                   {
                     time = Head_cache.now c.dates c.services;
                     request = req;
                     exn = e;
                     backtrace;
                   });
              if not c.head_written then ignore (reject c internal_error);
              Server_closed))

(* The read of each phase under its timeout. Only a head that needs more
   than one read pays for the clock and a timer. *)
let timed_read (progress : Progress.t) (config : Config.t)
    (services : Services.t) read buf off len =
  let timeouts = config.timeouts in
  match progress.phase with
  | Idle ->
      (* Bounded by [idle_deadline], enforced by the loop's sweeper: no
         timer per request. The sweeper may also interrupt it with
         [Unwind.Park] if it waits (see [Progress.Reading]). *)
      progress.idle_wait <- Reading;
      let n =
        match read buf off len with
        | n ->
            progress.idle_wait <- Not_waiting;
            n
        | exception e ->
            progress.idle_wait <- Not_waiting;
            raise e
      in
      progress.phase <- Head;
      n
  | Head -> (
      let now = services.monotonic_ns () in
      if progress.head_deadline = 0 then
        progress.head_deadline <-
          now + Progress.ns_of_seconds timeouts.request_header;
      let remaining = float_of_int (progress.head_deadline - now) *. 1e-9 in
      if remaining <= 0. then raise Unwind.Timed_out;
      match services.timeout remaining (fun () -> read buf off len) with
      | Some n -> n
      | None -> raise Unwind.Timed_out)
  | Body -> (
      match services.timeout timeouts.body (fun () -> read buf off len) with
      | Some n -> n
      | None -> raise Unwind.Timed_out)
  | Upgraded ->
      (* Not through the parser's input: an upgraded connection reads with
         [c.upgraded_read]. *)
      read buf off len

(* The connection's own read and write: their exceptions are carried
   through handlers as [Io_failed]. *)
let failed e = Unwind.Io_failed (e, Printexc.get_raw_backtrace ())

type file_sender = Output.file_sender = {
  write_more : bytes -> int -> int -> unit;
  send_file : Unix.file_descr -> off:int -> len:int -> int;
}

type progress = Progress.t

type buffers = {
  input : Braid_http.Input.storage;
  output : Braid_http.Input.storage;
}

type config = {
  server : Config.t;
  dates : Head_cache.t;
  progress : progress;
  buffers : buffers option;
}

type transport = {
  peer : Unix.sockaddr option;
  read : bytes -> int -> int -> int;
  write : bytes -> int -> int -> unit;
  await_input : (unit -> unit) option;
  file_sender : (unit -> file_sender) option;
  alpn : unit -> string option;
}

type t = Pipeline_state.t

let standalone server dates =
  {
    server;
    dates;
    progress = Progress.create (Atomic.make false);
    buffers = None;
  }

(* The buffers back to their pool, if they came from one: a no-op for
   buffers already given back. *)
let release out input =
  Output.release out;
  Input.release input

let create ?(secure = false) { server = config; dates; progress; buffers }
    transport (services : Services.t) : t =
  let write_socket = transport.write and read = transport.read in
  (* Counted for [send_stalled]. A piece that raises ends the connection,
     so its count stays odd. *)
  let rec counted_write buf off len =
    let piece = if len > send_piece then send_piece else len in
    progress.writes <- progress.writes + 1;
    write_socket buf off piece;
    progress.writes <- progress.writes + 1;
    if piece < len then counted_write buf (off + piece) (len - piece)
  in
  let write buf off len =
    match counted_write buf off len with
    | () -> ()
    | exception (Braid.Cancelled as e) -> raise e
    | exception e -> raise (failed e)
  in
  (* The same count and wrapping for the head sent before a file and for
     each piece of the file. *)
  let file_sender =
    Option.map
      (fun make_sender () : Output.file_sender ->
        let sender : Output.file_sender = make_sender () in
        let counted f =
          progress.writes <- progress.writes + 1;
          match f () with
          | v ->
              progress.writes <- progress.writes + 1;
              v
          | exception ((Braid.Cancelled | Output.Cannot_send_file) as e) ->
              progress.writes <- progress.writes + 1;
              raise e
          | exception e -> raise (failed e)
        in
        let rec write_more buf off len =
          let piece = if len > send_piece then send_piece else len in
          counted (fun () -> sender.write_more buf off piece);
          if piece < len then write_more buf (off + piece) (len - piece)
        in
        {
          write_more;
          send_file =
            (fun fd ~off ~len ->
              counted (fun () -> sender.send_file fd ~off ~len));
        })
      transport.file_sender
  in
  let out =
    match buffers with
    | Some { output; _ } ->
        Output.create ~storage:output ~size:config.output_buffer write
    | None -> Output.create ~size:config.output_buffer write
  in
  (* Whatever is buffered goes out before the connection waits for more:
     pipelined responses share writes, and none waits behind a read. The
     input's own reader: any fiber holding it (one the handler forks to read
     the body) refills it with no handler. *)
  let read_more buf off len =
    Output.flush out;
    match timed_read progress config services read buf off len with
    | n -> n
    | exception ((Braid.Cancelled | Unwind.Timed_out | Unwind.Park) as e) ->
        raise e
    | exception e -> raise (failed e)
  in
  let input =
    match buffers with
    | Some { input; _ } -> Input.create ~storage:input ~read:read_more ()
    | None -> Input.create ~size:config.input_buffer ~read:read_more ()
  in
  progress.release <- (fun () -> release out input);
  let head_limits =
    match services.largest_max_body with
    | Some m when m > config.limits.max_body ->
        { config.limits with max_body = m }
    | _ -> config.limits
  in
  {
    config;
    head_limits;
    dates;
    peer = transport.peer;
    secure;
    input;
    out;
    progress;
    services;
    await_input = transport.await_input;
    alpn = transport.alpn;
    file_sender;
    body = Body.empty;
    ending = Handler.Ending.finished;
    head_written = false;
    abandon_body = false;
    closed_as_asked = false;
    upgraded_read = read;
    upgraded_write = counted_write;
  }

let release_buffers (c : Pipeline_state.t) = release c.out c.input
let closed_as_asked (c : Pipeline_state.t) = c.closed_as_asked

let resume (c : Pipeline_state.t) =
  match
    (* The pipeline is served by the fiber that resumes it, until it ends
       or parks (and a parked connection is taken up with a pipeline made
       anew, maybe by another fiber). *)
    let fiber = Braid.Private.Fiber.current () in
    let outcome =
      try loop c ~fiber ~turn:(turn c ~fiber)
      with Unwind.Abort -> Server_closed
    in
    Output.flush c.out;
    release_buffers c;
    outcome
  with
  | outcome -> outcome
  | exception Unwind.Park ->
      (* Asked while idle: the handlers' fibers end, and the stacks they
         grew serving requests go back to the runtime while the connection
         waits outside them (its caller waits for input, and resumes it, or
         a pipeline made anew, when it comes). Its buffers, if a read held
         them (the sweeper gives a wait's back itself), go back to their
         pool. *)
      release_buffers c;
      c.progress.parked <- true;
      Parked
  | exception Unwind.Io_failed (e, bt) -> Printexc.raise_with_backtrace e bt

let serve (c : Pipeline_state.t) =
  (* The first request's head is due [request_header] seconds after the
     connection starts. *)
  Progress.start c.progress c.config.timeouts ~now:(c.services.monotonic_ns ());
  resume c
