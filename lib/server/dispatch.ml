open Braid_web
open Braid_http

(* Where a body limit comes from, in the text of its 413: the client (or the
   developer reading it) learns which setting to change. *)
let route_limit = "the route's max_body"
let server_limit = "the server's limit: --max-body, MaxBodySize"
let largest_route_limit = "the largest route max_body"

let error_page (c : Pipeline_state.t) req (response : Response.t) =
  if response.status < 400 then response
  else
    match c.services.error_page req response with
    | r -> r
    | exception exn ->
        let backtrace = Printexc.get_raw_backtrace () in
        if Unwind.is_connections_own exn then
          Printexc.raise_with_backtrace exn backtrace;
        Pipeline_state.log_error c
          ("the error page raised " ^ Printexc.to_string exn
         ^ "; the server's own page was sent");
        response

let page_if_error c req (response : Response.t) =
  if response.status < 400 then response else error_page c (Some req) response

let failure (c : Pipeline_state.t) (req : Request.t) ~time exn =
  let backtrace = Printexc.get_raw_backtrace () in
  if Unwind.is_connections_own exn then
    Printexc.raise_with_backtrace exn backtrace;
  c.services.log (Handler_failed { time; request = req; exn; backtrace });
  error_page c (Some req) (Response.error 500 "")

(* The handler was cancelled: its body may be half read. *)
let handler_timed_out (c : Pipeline_state.t) (req : Request.t) ~time seconds =
  c.abandon_body <- true;
  c.services.log
    (Message
       {
         time;
         level = Warning;
         text =
           Printf.sprintf "%s %s: handler timed out after %gs"
             (Method.to_string req.meth)
             req.target seconds;
       });
  error_page c (Some req)
    (Response.error
       ~headers:[ ("Connection", "close") ]
       503 "handler timed out")

let run_handler (c : Pipeline_state.t) (handler : Handler.t) request ~time =
  match
    match c.config.timeouts.handler with
    | Some seconds -> (
        match c.services.timeout seconds (fun () -> handler request) with
        | Some r -> r
        | None -> handler_timed_out c request.Handler.head ~time seconds)
    | None -> handler request
  with
  | r -> r
  | exception exn -> failure c request.head ~time exn

(* Runs [serve] (the whole exchange: dispatch, response, access log) with
   the request's id bound for the connection fiber, so that every log line
   and trace event of the request, in the fibers and pool tasks it starts
   too, carries it. *)
(* Top-level, not a local closure: one would be allocated for every
   request, traced or not. *)
let traced_begin fiber_id (req : Request.t) id =
  Braid_trace.Probe.http_began ~fiber:fiber_id
    ~meth:(Method.to_string req.meth)
    ~path:req.target
    ~request_id:(Log.Request_id.to_string id)

let with_request_id ~fiber (req : Request.t) serve =
  let id = Log.Request_id.of_request req in
  match fiber with
  | Some fiber ->
      if Braid_trace.Probe.enabled () then
        traced_begin (Braid.Private.Fiber.id fiber) req id;
      Log.Request_id.with_id_in fiber id serve
  | None ->
      if Braid_trace.Probe.enabled () then
        traced_begin (Braid.Fiber.self_id ()) req id;
      Log.Request_id.with_id id serve

(* The end of the request's trace slice: what was sent, once it was. *)
let traced_end ~fiber ~status ~bytes =
  if Braid_trace.Probe.enabled () then
    Braid_trace.Probe.http_ended
      ~fiber:
        (match fiber with
        | Some fiber -> Braid.Private.Fiber.id fiber
        | None -> Braid.Fiber.self_id ())
      ~status ~bytes

let answer (c : Pipeline_state.t) (req : Request.t) ~now ~path ~query =
  (* Routes and files see the path with its dot-segments resolved, so that
     /./fib/3 and /%66ib/3 reach the same route, and rules on paths cannot be
     dodged with dots. *)
  let normalized = Url_path.normalize path in
  let path = match normalized with Ok p -> p | Error _ -> path in
  let routed =
    match (req.target_form, normalized) with
    | Authority_form, _ -> Error (Response.error 501 "CONNECT is not supported")
    | Asterisk_form, _ -> Error (Response.empty 200)
    | (Origin_form | Absolute_form), Error e ->
        Error (Response.error 400 (Url_path.error_to_string e))
    | (Origin_form | Absolute_form), Ok path -> (
        match c.services.find_handler req.meth path with
        | found -> Ok found
        | exception exn -> Error (failure c req ~time:now exn))
  in
  (* The route's own limit, lower or higher than the server's: the parser
     let through declared lengths up to the largest route limit
     ([c.head_limits]), so each body is held to its route's here. *)
  (* Two matches rather than one returning a pair: no tuple per request. *)
  let limits =
    match routed with
    | Ok (Found { max_body = Some m; _ }) when m <> c.config.limits.max_body ->
        { c.config.limits with max_body = m }
    | _ -> c.config.limits
  in
  let source =
    match routed with
    | Ok (Found { max_body = Some _; _ }) -> route_limit
    | _ -> server_limit
  in
  let body = Settlement.body_for c req limits ~source in
  let ending = Handler.Ending.create () in
  c.ending <- ending;
  (* Everything the server answers to this request, inside the global
     middleware: routes, static files, and its own errors. A handler's
     exception becomes its 500 here, inside the middleware, so that what
     middleware adds (security headers) is on the 500 too. The connection's
     own exceptions, the handler timeout's cancel among them, go through
     ([failure] re-raises them). One closure per request, as before the 500
     moved in. *)
  let inner (r : Handler.request) =
    match
      match routed with
      | Error response -> error_page c (Some req) response
      | Ok (Found { handler; params; tail; _ }) -> (
          match req.body with
          | Content_length n when n > limits.max_body ->
              (* Not read at all: the connection closes after the answer. *)
              c.abandon_body <- true;
              error_page c (Some req)
                (Response.error 413 (Limits.body_too_large ~source limits))
          | No_body | Content_length _ | Chunked ->
              handler { r with params; tail })
      | Ok (Method_not_allowed allowed) ->
          error_page c (Some req)
            (Response.error ~headers:[ ("Allow", Router.allow allowed) ] 405 "")
      | Ok Not_found -> (
          match c.config.root with
          | None -> error_page c (Some req) (Response.error 404 "")
          | Some root ->
              (* [Some req] made only for an error: a file served (most
                 requests here) allocates no option. *)
              page_if_error c req
                (Static.serve c.services ~root ~index:c.config.index
                   ~precompressed:c.config.precompressed ~dates:c.dates r.head
                   ~path ~query))
    with
    | response -> response
    | exception exn -> failure c req ~time:now exn
  in
  run_handler c
    (c.services.middleware inner)
    ~time:now
    {
      head = req;
      path;
      query;
      params = [];
      tail = None;
      peer = c.peer;
      secure = c.secure;
      body;
      now;
      ending;
    }

let dispatch c req ~now ~path ~query =
  let response = answer c req ~now ~path ~query in
  (response, c.body)
