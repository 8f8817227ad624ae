open Braid_http

type outcome = Peer_closed | Server_closed
type timer = { timeout : 'a. float -> (unit -> 'a) -> 'a option }

(* What the connection is waiting for: decides which timeout bounds a read
   and whether a shutdown may close the connection at once. *)
type phase = Idle | Head | Body

type control = {
  draining : bool Atomic.t;
  mutable phase : phase;
  mutable first : bool;
  mutable head_deadline : int;
      (* Monotonic nanoseconds; 0 until the head's first refill (a head read
         in one go never reads the clock). *)
  mutable idle_deadline : int;
      (* Monotonic nanoseconds: the end of the current idle wait. *)
  mutable writes : int;
      (* Twice the pieces written, plus one while a piece is being written:
         two increments per piece, no clock read. *)
  mutable send_timeout : int; (* Nanoseconds. *)
  mutable seen_writes : int;
  mutable seen_at : int;
      (* [send_stalled]'s memory: [writes] when it last looked, and when it
         first saw that value. *)
}

let control draining =
  {
    draining;
    phase = Body;
    first = true;
    head_deadline = 0;
    idle_deadline = max_int;
    writes = 0;
    send_timeout = max_int;
    seen_writes = 0;
    seen_at = 0;
  }

let is_idle c = c.phase = Idle
let idle_deadline c = c.idle_deadline

let send_stalled c ~now =
  if c.writes land 1 = 0 then false
  else if c.writes <> c.seen_writes then (
    c.seen_writes <- c.writes;
    c.seen_at <- now;
    false)
  else now - c.seen_at >= c.send_timeout

(* The most one write hands to the socket: a client that keeps reading
   finishes a piece within the send timeout, however large the response. *)
let send_piece = 65536
let now_ns () = Int64.to_int (Mtime_clock.now_ns ())

module type S = sig
  type env

  val serve :
    ?timer:timer ->
    ?control:control ->
    ?buffers:bytes * bytes ->
    env ->
    Config.t ->
    Date_cache.t ->
    peer:Unix.sockaddr option ->
    read:(bytes -> int -> int -> int) ->
    write:(bytes -> int -> int -> unit) ->
    outcome
end

(* An exception of the connection's own read or write, carried through
   handlers untouched and re-raised as it was by [serve]. *)
exception Io_failed of exn * Printexc.raw_backtrace

(* The response cannot be completed (the head is out): close now. *)
exception Abort

(* A read waited longer than its phase allows ([control.phase] tells which). *)
exception Timed_out

let continue_line = "HTTP/1.1 100 Continue\r\n\r\n"

(* Fields the pipeline writes itself. *)
let is_framing name =
  match String.length name with
  | 4 -> Headers.equal_name name "date"
  | 10 -> Headers.equal_name name "connection"
  | 14 -> Headers.equal_name name "content-length"
  | 17 -> Headers.equal_name name "transfer-encoding"
  | _ -> false

type framing = Length of int | Chunked | Unframed

module Make (C : Capabilities.S) = struct
  module Static = Static.Make (C)

  type env = C.env

  type conn = {
    env : C.env;
    config : Config.t;
    dates : Date_cache.t;
    peer : Unix.sockaddr option;
    input : Input.t;
    out : Output.t;
    log : Log.event -> unit;
    clock : unit -> float;
    timer : timer option;
    control : control;
    mutable head_written : bool;
    mutable abandon_body : bool;
        (* The handler was cancelled: its body is not worth draining. *)
  }

  (* What a handler's exception becomes: a 500 and a log event; the
     connection's own failures and cancellation go on unwinding. *)
  let failure c (req : Request.t) = function
    | (Braid.Cancelled | Io_failed _ | Abort | Timed_out) as e -> raise e
    | exn ->
        let backtrace = Printexc.get_raw_backtrace () in
        c.log (Handler_failed { request = req; exn; backtrace });
        Response.error 500 ""

  let write_head c ~now ~status ~headers ~framing ~keep_alive
      ~(version : Request.version) =
    let out = c.out in
    c.head_written <- true;
    Output.add_string out (Status.status_line status);
    Output.add_string out (Date_cache.header_line c.dates now);
    List.iter
      (fun (name, value) ->
        if not (is_framing name) then Output.add_field out name value)
      headers;
    (match framing with
    | Length n ->
        Output.add_string out "Content-Length: ";
        Output.add_int out n;
        Output.add_string out "\r\n"
    | Chunked -> Output.add_string out "Transfer-Encoding: chunked\r\n"
    | Unframed -> ());
    if not keep_alive then Output.add_string out "Connection: close\r\n"
    else if version = Http_1_0 then
      Output.add_string out "Connection: keep-alive\r\n";
    Output.add_string out "\r\n"

  let write_file c (contents : File.contents) ~offset ~length =
    match contents with
    | In_memory s ->
        (* The file changed size since its stat: the framing is lost. *)
        if offset + length > String.length s then raise Abort;
        Output.send c.out (Bytes.unsafe_of_string s) offset length
    | Reader { read; close } ->
        let rec copy offset remaining =
          if remaining > 0 then (
            let n =
              Output.fill_from c.out (fun buf off len ->
                  read ~offset buf off (min len remaining))
            in
            if n = 0 then raise Abort;
            copy (offset + n) (remaining - n))
        in
        Fun.protect ~finally:close (fun () ->
            match copy offset length with
            | () -> ()
            | exception
                ((Braid.Cancelled | Io_failed _ | Abort | Timed_out) as e) ->
                raise e
            | exception e ->
                c.log
                  (Message
                     {
                       level = Error;
                       text = "reading a file: " ^ Printexc.to_string e;
                     });
                raise Abort)

  let write_stream c (req : Request.t) f ~chunked =
    let sent = ref 0 and limit = c.config.output_buffer in
    let write buf off len =
      if chunked then (
        Output.add_hex c.out len;
        Output.add_string c.out "\r\n";
        Output.send c.out buf off len;
        Output.add_string c.out "\r\n")
      else Output.send c.out buf off len;
      sent := !sent + len;
      if Output.length c.out >= limit then Output.flush c.out
    in
    let writer =
      Response.Writer.make ~write ~flush:(fun () -> Output.flush c.out)
    in
    (match f writer with
    | () -> ()
    | exception ((Braid.Cancelled | Io_failed _ | Abort | Timed_out) as e) ->
        raise e
    | exception exn ->
        let backtrace = Printexc.get_raw_backtrace () in
        c.log (Handler_failed { request = req; exn; backtrace });
        raise Abort);
    if chunked then Output.add_string c.out "0\r\n\r\n";
    !sent

  type body_state = Consumed | Unread | Failed of Parse_error.t

  (* The body must be finished before the next request is read. One never
     invited with 100 Continue may never come: do not wait for it. *)
  let settle body =
    match Body.failure body with
    | Some e -> Failed e
    | None -> (
        if Body.is_finished body then Consumed
        else if Body.continue_pending body then Unread
        else
          match Body.drain body with Ok () -> Consumed | Error e -> Failed e)

  (* The handler was cancelled: its body may be half read. *)
  let handler_timed_out c (req : Request.t) seconds =
    c.abandon_body <- true;
    c.log
      (Message
         {
           level = Warning;
           text =
             Printf.sprintf "%s %s: handler timed out after %gs"
               (Method.to_string req.meth)
               req.target seconds;
         });
    Response.error ~headers:[ ("Connection", "close") ] 503 "handler timed out"

  let dispatch c (req : Request.t) ~now ~path ~query =
    let limits = c.config.limits in
    let body_for (limits : Limits.t) =
      match req.body with
      | No_body -> Body.empty
      | _ ->
          let continue =
            if req.expect_continue then
              Some (fun () -> Output.add_string c.out continue_line)
            else None
          in
          Body.create c.input limits req.body ~continue
    in
    match req.target_form with
    | Authority_form ->
        (Response.error 501 "CONNECT is not supported", body_for limits)
    | Asterisk_form -> (Response.empty 200, body_for limits)
    | Origin_form | Absolute_form -> (
        match C.find_handler c.env req.meth path with
        | exception exn -> (failure c req exn, body_for limits)
        | Found { handler; params; max_body } ->
            let limits =
              match max_body with
              | Some m when m < limits.max_body -> { limits with max_body = m }
              | _ -> limits
            in
            let body = body_for limits in
            let response =
              match req.body with
              | Content_length n when n > limits.max_body ->
                  Response.error 413 "body too large"
              | _ -> (
                  let request : Handler.request =
                    {
                      head = req;
                      path;
                      query;
                      params;
                      peer = c.peer;
                      body;
                      now;
                      log = c.log;
                    }
                  in
                  match
                    match (c.timer, c.config.timeouts.handler) with
                    | Some timer, Some seconds -> (
                        match
                          timer.timeout seconds (fun () -> handler request)
                        with
                        | Some r -> r
                        | None -> handler_timed_out c req seconds)
                    | _ -> handler request
                  with
                  | r -> r
                  | exception exn -> failure c req exn)
            in
            (response, body)
        | Method_not_allowed allowed ->
            ( Response.error ~headers:[ ("Allow", Router.allow allowed) ] 405 "",
              body_for limits )
        | Not_found ->
            let response =
              match c.config.root with
              | Some root -> (
                  match
                    Static.serve c.env ~root ~index:c.config.index
                      ~dates:c.dates req ~path ~query
                  with
                  | r -> r
                  | exception exn -> failure c req exn)
              | None -> Response.error 404 ""
            in
            (response, body_for limits))

  let file_error (e : File.error) =
    match e with
    | Not_found -> Response.error 404 ""
    | Forbidden -> Response.error 403 ""
    | Failed _ -> Response.error 500 ""

  (* Serves one parsed request; [true] if the connection goes on. *)
  let exchange c (req : Request.t) =
    let now = Date_cache.now c.dates c.clock in
    let path, query = Url_path.split_target req.target in
    let response, body = dispatch c req ~now ~path ~query in
    let is_stream = match response.body with Stream _ -> true | _ -> false in
    (* Settled before the head, so that the head tells the truth about the
       connection; a stream may read the body while it runs, so later. *)
    let response, body_ok =
      if c.abandon_body then (response, false)
      else if is_stream then (response, true)
      else
        match settle body with
        | Consumed -> (response, true)
        | Unread -> (response, false)
        | Failed e -> (Response.error e.status e.reason, false)
    in
    let no_content = req.meth = HEAD || Status.has_no_body response.status in
    (* Opened before the head: a file gone meanwhile still gets an answer. *)
    let response, contents =
      match response.body with
      | File { path; info; _ } when not no_content -> (
          match C.open_file c.env path info with
          | Ok contents -> (response, Some contents)
          | Error e ->
              (match e with
              | Failed why ->
                  c.log (Message { level = Error; text = path ^ ": " ^ why })
              | Not_found | Forbidden -> ());
              (file_error e, None)
          | exception exn -> (failure c req exn, None))
      | _ -> (response, None)
    in
    let chunked = is_stream && req.version = Http_1_1 in
    let keep_alive =
      req.keep_alive && body_ok
      && (not (Atomic.get c.control.draining))
      && (not (Response.wants_close response))
      && not (is_stream && (not chunked) && not no_content)
    in
    let framing =
      if Status.has_no_body response.status then Unframed
      else
        match response.body with
        | Empty -> Length 0
        | String s -> Length (String.length s)
        | File { length; _ } -> Length length
        | Stream _ -> if chunked then Chunked else Unframed
    in
    write_head c ~now ~status:response.status ~headers:response.headers ~framing
      ~keep_alive ~version:req.version;
    let sent =
      if no_content then 0
      else
        match (response.body, contents) with
        | Empty, _ | File _, None -> 0
        | String s, _ ->
            Output.send c.out (Bytes.unsafe_of_string s) 0 (String.length s);
            String.length s
        | File { offset; length; _ }, Some contents ->
            write_file c contents ~offset ~length;
            length
        | Stream f, _ -> write_stream c req f ~chunked
    in
    let keep_alive =
      keep_alive
      && ((not is_stream)
         || match settle body with Consumed -> true | _ -> false)
    in
    c.log
      (Access
         {
           peer = c.peer;
           time = now;
           request = Some req;
           status = response.status;
           body_bytes = sent;
         });
    keep_alive

  (* A request the parser refused; [true] if the connection goes on. *)
  let reject c (e : Parse_error.t) =
    let keep_alive = (not e.close) && not (Atomic.get c.control.draining) in
    let now = Date_cache.now c.dates c.clock in
    let response = Response.error e.status e.reason in
    let text = match response.body with String s -> s | _ -> "" in
    write_head c ~now ~status:e.status ~headers:response.headers
      ~framing:(Length (String.length text))
      ~keep_alive ~version:Http_1_1;
    Output.add_string c.out text;
    c.log
      (Access
         {
           peer = c.peer;
           time = now;
           request = None;
           status = e.status;
           body_bytes = String.length text;
         });
    keep_alive

  let request_timeout =
    { Parse_error.status = 408; reason = "request timed out"; close = true }

  (* Pipelined responses wait in the buffer for the next read, but only up
     to its size: a flood of tiny pipelined requests must not grow it. *)
  let next c =
    if Output.length c.out >= c.config.output_buffer then Output.flush c.out

  (* Before waiting for a request: out go the buffered responses, and a
     draining server closes the connection instead of waiting. *)
  let rec loop c =
    let control = c.control in
    if Input.length c.input = 0 then (
      Output.flush c.out;
      (* The first wait is bounded by the first request's deadline. *)
      if Option.is_some c.timer && not control.first then
        control.idle_deadline <-
          now_ns () + int_of_float (c.config.timeouts.keep_alive *. 1e9);
      control.phase <- Idle)
    else control.phase <- Head;
    if control.phase = Idle && Atomic.get control.draining then Peer_closed
    else
      match Request_parser.read_request c.input c.config.limits with
      | exception Timed_out ->
          if control.phase = Idle then Peer_closed
          else (
            ignore (reject c request_timeout);
            Server_closed)
      | Error Eof -> Peer_closed
      | Error (Invalid e) ->
          if reject c e then (
            next c;
            loop c)
          else Server_closed
      | Ok req -> (
          control.phase <- Body;
          control.first <- false;
          control.head_deadline <- 0;
          c.head_written <- false;
          c.abandon_body <- false;
          match exchange c req with
          | true ->
              next c;
              loop c
          | false -> Server_closed
          | exception Timed_out ->
              (* A stalled body: answer if nothing was answered yet. *)
              if not c.head_written then ignore (reject c request_timeout);
              Server_closed)

  (* The connection's own read and write: their exceptions are carried
     through handlers as [Io_failed]. No closure per call. *)
  let failed e = Io_failed (e, Printexc.get_raw_backtrace ())

  (* The read of each phase under its timeout. Only a head that needs more
     than one read pays for the clock and a timer. *)
  let timed_read (timer : timer) control (timeouts : Config.timeouts) read buf
      off len =
    match control.phase with
    | Idle ->
        (* Bounded by [idle_deadline], enforced by the connection's owner:
           no timer per request. *)
        let n = read buf off len in
        control.phase <- Head;
        n
    | Head -> (
        let now = now_ns () in
        if control.head_deadline = 0 then
          control.head_deadline <-
            now + int_of_float (timeouts.request_header *. 1e9);
        let remaining = float_of_int (control.head_deadline - now) *. 1e-9 in
        if remaining <= 0. then raise Timed_out;
        match timer.timeout remaining (fun () -> read buf off len) with
        | Some n -> n
        | None -> raise Timed_out)
    | Body -> (
        match timer.timeout timeouts.body (fun () -> read buf off len) with
        | Some n -> n
        | None -> raise Timed_out)

  let serve ?timer ?control:ctl ?buffers env (config : Config.t) dates ~peer
      ~read ~write:write_socket =
    let control =
      match ctl with Some c -> c | None -> control (Atomic.make false)
    in
    (* The first request's head is due [request_header] seconds after the
       connection starts. *)
    if Option.is_some timer then (
      control.head_deadline <-
        now_ns () + int_of_float (config.timeouts.request_header *. 1e9);
      control.idle_deadline <- control.head_deadline);
    control.send_timeout <- int_of_float (config.timeouts.send *. 1e9);
    (* Counted for [send_stalled]. A piece that raises ends the connection,
       so its count stays odd. *)
    let rec write buf off len =
      let piece = if len > send_piece then send_piece else len in
      control.writes <- control.writes + 1;
      (match write_socket buf off piece with
      | () -> ()
      | exception (Braid.Cancelled as e) -> raise e
      | exception e -> raise (failed e));
      control.writes <- control.writes + 1;
      if piece < len then write buf (off + piece) (len - piece)
    in
    let input_buffer, output_buffer =
      match buffers with Some (i, o) -> (Some i, Some o) | None -> (None, None)
    in
    let out =
      Output.create ?buffer:output_buffer ~size:config.output_buffer write
    in
    (* Whatever is buffered goes out before the connection waits for more:
       pipelined responses share writes, and none waits behind a read. *)
    let read buf off len =
      Output.flush out;
      match read buf off len with
      | n -> n
      | exception (Braid.Cancelled as e) -> raise e
      | exception e -> raise (failed e)
    in
    let read =
      match timer with
      | None -> read
      | Some timer ->
          (* A closure of arity 3: a partial application would allocate at
             each call. *)
          fun buf off len ->
            timed_read timer control config.timeouts read buf off len
    in
    match
      Input.with_reader ~size:config.input_buffer ?buffer:input_buffer read
        (fun input ->
          let c =
            {
              env;
              config;
              dates;
              peer;
              input;
              out;
              log = C.log env;
              clock = (fun () -> C.now env);
              timer;
              control;
              head_written = false;
              abandon_body = false;
            }
          in
          let outcome =
            try C.run env (fun () -> loop c) with Abort -> Server_closed
          in
          Output.flush out;
          outcome)
    with
    | outcome -> outcome
    | exception Io_failed (e, bt) -> Printexc.raise_with_backtrace e bt
end
