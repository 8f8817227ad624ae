open Braid_web
open Braid_web.Private
open Braid_http

(* Whether [req] asked for [protocol] (RFC 9110 §7.8): only an HTTP/1.1
   request can, with the protocol in its Upgrade field and "upgrade" among
   its connection options. *)
let asked_for (req : Request.t) protocol =
  let name p =
    match String.index_opt p '/' with Some i -> String.sub p 0 i | None -> p
  in
  req.version = Http_1_1
  && Headers.has_token req.headers "connection" "upgrade"
  && List.exists
       (fun v ->
         List.exists
           (fun p ->
             let p = String.trim p in
             String.equal (String.lowercase_ascii p)
               (String.lowercase_ascii protocol)
             || (not (String.contains protocol '/'))
                && String.equal
                     (String.lowercase_ascii (name p))
                     (String.lowercase_ascii protocol))
           (String.split_on_char ',' v))
       (Headers.find_all req.headers "upgrade")

(* The handler answered an upgrade the request did not ask for (or before
   reading its body): its mistake, a 500. *)
let refused (c : Pipeline_state.t) (req : Request.t) ~time why =
  c.services.log
    (Handler_failed
       {
         time;
         request = req;
         exn = Invalid_argument ("Braid_web.Response.upgrade: " ^ why);
         backtrace = Printexc.get_callstack 0;
       });
  Dispatch.error_page c (Some req) (Response.error 500 "")

(* The 101 is out: the connection is the callback's until it returns, then
   it closes. *)
let run (c : Pipeline_state.t) (req : Request.t) ~now ~protocol
    (response : Response.t) run =
  let progress = c.progress in
  Framing.write_head ~upgrade:true c ~now ~status:101 ~headers:response.headers
    Unframed ~keep_alive:false ~version:req.version;
  c.services.log
    (Access
       {
         peer = c.peer;
         time = now;
         request = Some req;
         status = 101;
         body_bytes = 0;
       });
  Output.flush c.out;
  Output.release c.out;
  (* The bytes read past the request: the new protocol's first. *)
  let input = c.input in
  let n = Input.length input in
  let buffered = Bytes.sub_string input.buf input.pos n in
  Input.consume input n;
  Input.release input;
  progress.phase <- Upgraded;
  let up =
    Upgraded.make ?peer:c.peer ~buffered
      ~shutting_down:(fun () -> Atomic.get progress.draining)
      ~read:c.upgraded_read ~write:c.upgraded_write ()
  in
  ignore protocol;
  match run up with
  | () -> Upgraded.finish up
  | exception Upgraded.Shutdown -> Upgraded.finish up
  | exception e ->
      let bt = Printexc.get_raw_backtrace () in
      Upgraded.finish up;
      if Unwind.is_connections_own e then Printexc.raise_with_backtrace e bt
      else if Upgraded.failed_io up e then
        (* A reset: the connection's end, as for a request's read. *)
        raise (Unwind.Io_failed (e, bt))
      else
        c.services.log
          (Handler_failed
             {
               time = Head_cache.now c.dates c.services;
               request = req;
               exn = e;
               backtrace = bt;
             })
