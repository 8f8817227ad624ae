open Braid_web
open Braid_io
open Registry

(* Stop sending, then discard input until the peer closes (or the budget
   runs out), so the kernel does not answer unread data with a reset. *)
let linger socket ~seconds ~buffer:buf =
  match Net.shutdown socket Unix.SHUTDOWN_SEND with
  | exception Braid_io.Io_error _ -> ()
  | () ->
      let len = Bytes.length buf in
      let rec discard budget =
        if budget > 0 then
          match Net.read_into socket buf 0 len with
          | 0 -> ()
          | n -> discard (budget - n)
      in
      ignore
        (Services.timeout seconds (fun () ->
             try discard (1 lsl 20) with Braid_io.Io_error _ -> ()))

let no_delay socket =
  try Unix.setsockopt (Fd.to_unix socket) Unix.TCP_NODELAY true
  with Unix.Unix_error _ -> ()

let counted c read =
  match c.received with
  | None -> read
  | Some count ->
      fun buf off len ->
        let n = read buf off len in
        count n;
        n

let lingering c (config : Config.t) socket =
  let input = pool c config.input_buffer in
  let buffer = Buffer_pool.take input in
  linger socket ~seconds:config.linger ~buffer;
  Buffer_pool.give input buffer

(* Plain connections run only in fibers of the loop: the accept loop's, and
   the unparker's. *)
let current_fiber () =
  match Braid.Private.Fiber.current () with
  | Some fiber -> fiber
  | None ->
      invalid_arg "Braid_server.Connection: plain connections run in fibers"

let run_in_scope fiber serve arg =
  Braid.Private.Fiber.run_scope_in fiber (fun scope ->
      match serve scope arg with
      | outcome -> Ok outcome
      | exception Braid.Cancelled when Fiber.Scope.is_cancelled scope ->
          (* Ended from outside (evicted, drained, timed out): nothing is
             owed to the peer. *)
          Ok Pipeline.Peer_closed
      | exception e -> Error (e, Printexc.get_raw_backtrace ()))

let serve_in_scope fiber ~running serve =
  run_in_scope fiber
    (fun scope () ->
      running scope;
      serve ())
    ()
