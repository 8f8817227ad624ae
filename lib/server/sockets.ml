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

(* Whether a connection the server ends must linger before it closes.
   RFC 9112 §9.6's reason for lingering is a client still sending: the
   kernel would answer its bytes, once the socket is closed, with a reset
   that destroys the response it has not read yet. A client that asked for
   the close sends nothing more; unless something of its waits unread,
   closing at once resets nothing. The loop may not know whether the
   socket is drained (a read that filled its buffer, or OpenSSL's reads):
   a look tells then. *)
let must_linger ~asked socket =
  (not asked)
  || Fd.may_have_input socket
     &&
     match peek socket with
     | `Byte _ -> true
     | `Nothing | `End_or_error -> false

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
