type socket = Fd.t

exception Error = Handle.Error

let fail = Handle.fail

let tcp ip port =
  match Unix.inet_addr_of_string ip with
  | addr -> Unix.ADDR_INET (addr, port)
  | exception Failure _ ->
      invalid_arg ("Braid_io.Net.tcp: not an IP address: " ^ ip)

let unix_path path = Unix.ADDR_UNIX path
let close = Fd.close
let read_into = Fd.read_into
let write_all = Fd.write_all
let write_string = Fd.write_string
let send_more_when_ready _ unix buf off len = Syscall.send_more unix buf off len

let send_more s buf off len =
  Handle.send_all s ~more:true ~when_ready:send_more_when_ready buf off len

let write_more s buf off len =
  if off < 0 || len < 0 || off > Bytes.length buf - len then
    invalid_arg "Braid_io.Net.write_more: invalid range";
  if len > 0 then (
    Handle.usable s ~op:"write";
    Loop.spend s;
    send_more s buf off len)

(* [sent] bytes of [len] went; the rest from [off]. *)
let rec send_file s file ~off ~len ~sent =
  if sent = len then sent
  else
    match
      Handle.nonblocking s Writable ~op:"sendfile" ~blocked:Handle.would_block
        (fun _ unix file off len -> Syscall.sendfile unix file off len)
        file off (len - sent)
    with
    | 0 -> sent (* The file ended before [len]. *)
    | n -> send_file s file ~off:(off + n) ~len ~sent:(sent + n)

let sendfile s file ~off ~len =
  if off < 0 || len < 0 then invalid_arg "Braid_io.Net.sendfile: invalid range";
  if len = 0 then 0
  else (
    Handle.usable s ~op:"sendfile";
    Loop.spend s;
    (* On io_uring, the bytes written before must go first. *)
    Handle.flush s ~op:"sendfile";
    send_file s file ~off ~len ~sent:0)

let checked op f s =
  Handle.usable s ~op;
  try f (Fd.to_unix s) with Unix.Unix_error (error, _, _) -> fail op error

let local_addr = checked "getsockname" Unix.getsockname
let peer_addr = checked "getpeername" Unix.getpeername

let shutdown s cmd =
  if cmd <> Unix.SHUTDOWN_RECEIVE then (
    Handle.usable s ~op:"shutdown";
    Handle.flush s ~op:"shutdown");
  checked "shutdown" (fun fd -> Unix.shutdown fd cmd) s

(* Only TCP reads trust a short read to have drained the socket (see
   [Loop.read_returned]): a Unix-domain read also stops where the credentials
   of two writers differ. *)
let is_tcp = function Unix.ADDR_INET _ -> true | Unix.ADDR_UNIX _ -> false

let socket ~sw ~op addr =
  let loop = Loop.current ~op:("Braid_io.Net." ^ op) in
  let unix =
    try Unix.socket ~cloexec:true (Unix.domain_of_sockaddr addr) SOCK_STREAM 0
    with Unix.Unix_error (error, _, _) -> fail op error
  in
  (match Unix.set_nonblock unix with
  | () -> ()
  | exception Unix.Unix_error (error, _, _) ->
      Unix.close unix;
      fail op error);
  Handle.register ~sw loop unix ~socket:true ~stream:(is_tcp addr)
    ~op:("Braid_io.Net." ^ op)

let listen ~sw ?(backlog = 4096) ?(reuse_addr = true) ?(reuse_port = false) addr
    =
  let s = socket ~sw ~op:"listen" addr in
  let unix = Fd.to_unix s in
  match
    (match addr with
    | Unix.ADDR_INET _ when reuse_addr ->
        Unix.setsockopt unix Unix.SO_REUSEADDR true
    | _ -> ());
    if reuse_port then Unix.setsockopt unix Unix.SO_REUSEPORT true;
    Unix.bind unix addr;
    Unix.listen unix backlog
  with
  | () -> s
  | exception Unix.Unix_error (error, _, _) ->
      (try Fd.close s with Error _ -> ());
      fail "listen" error

let accept_raw listener =
  Handle.usable listener ~op:"accept";
  match
    Handle.nonblocking listener Acceptable ~op:"accept" ~blocked:Option.is_none
      (fun _ unix () () () -> Syscall.accept unix)
      () () ()
  with
  | Some connection -> connection
  | None -> assert false

let accept ~sw listener =
  let unix, addr = accept_raw listener in
  let s =
    Handle.register ~sw (Loop.loop_of listener) unix ~socket:true
      ~stream:(is_tcp addr) ~op:"Braid_io.Net.accept"
  in
  (s, addr)

let accept_unowned listener =
  let unix, addr = accept_raw listener in
  match
    Loop.register (Loop.loop_of listener) unix ~socket:true
      ~stream:(is_tcp addr) ~op:"Braid_io.Net.accept_unowned"
  with
  | client -> (client, addr)
  | exception e ->
      Unix.close unix;
      raise e

let accept_fork ~sw ~on_error listener handle =
  let unix, addr = accept_raw listener in
  let op = "Braid_io.Net.accept_fork" in
  let client =
    match
      Loop.register (Loop.loop_of listener) unix ~socket:true
        ~stream:(is_tcp addr) ~op
    with
    | client -> client
    | exception e ->
        Unix.close unix;
        raise e
  in
  (* No switch per connection: the handler gets no switch to fork on, so
     closing after it is all a switch would do, without its lock and table. *)
  let serve () =
    let served =
      match handle client addr with () -> Ok () | exception e -> Error e
    in
    let closed =
      match Handle.close client with () -> Ok () | exception e -> Error e
    in
    match (served, closed) with
    | Ok (), Ok () -> ()
    | Error Braid.Cancelled, _ when Braid.Fiber.is_cancelled () ->
        raise Braid.Cancelled
    | Error e, _ | Ok (), Error e -> on_error e
  in
  match Braid.Fiber.fork ~sw serve with
  | _ -> ()
  | exception e ->
      (try Fd.close client with Error _ -> ());
      raise e

(* A Unix-domain connect with a full backlog fails with EAGAIN and nothing
   signals when to retry (no readiness to wait for, so not
   [Handle.nonblocking]): poll gently. *)
let unix_backlog_retry_ns = 1_000_000

let rec connect_unix s addr =
  match Unix.connect (Fd.to_unix s) addr with
  | () -> ()
  | exception Unix.Unix_error ((Unix.EAGAIN | Unix.EWOULDBLOCK), _, _) ->
      let loop = Loop.loop_of s in
      Loop.sleep_until loop ~deadline:(Loop.now_ns () + unix_backlog_retry_ns);
      connect_unix s addr
  | exception Unix.Unix_error (Unix.EINTR, _, _) -> connect_unix s addr
  | exception Unix.Unix_error (error, _, _) -> fail "connect" error

let connect_inet s addr =
  match Unix.connect (Fd.to_unix s) addr with
  | () -> ()
  | exception Unix.Unix_error ((Unix.EINPROGRESS | Unix.EINTR), _, _) -> (
      (* The handshake goes on in the kernel; writable means it is over. *)
      Handle.wait s ~write:true ~op:"connect";
      match Unix.getsockopt_error (Fd.to_unix s) with
      | None -> ()
      | Some error -> fail "connect" error)
  | exception Unix.Unix_error (error, _, _) -> fail "connect" error

let connect ~sw addr =
  let s = socket ~sw ~op:"connect" addr in
  match
    match addr with
    | Unix.ADDR_UNIX _ -> connect_unix s addr
    | Unix.ADDR_INET _ -> connect_inet s addr
  with
  | () -> s
  | exception e ->
      let bt = Printexc.get_raw_backtrace () in
      (try Fd.close s with Error _ -> ());
      Printexc.raise_with_backtrace e bt

exception Unknown_host of string

let () =
  Printexc.register_printer (function
    | Unknown_host name -> Some ("Braid_io.Net.Unknown_host " ^ name)
    | _ -> None)

(* The result is a list: nothing to dispose of if the caller gave up. *)
let getaddrinfo ?pool host service options =
  Blocking.run ?pool (fun () -> Unix.getaddrinfo host service options)

let resolve ?pool host port =
  if port < 0 || port > 65535 then
    invalid_arg (Printf.sprintf "Braid_io.Net.resolve: port %d" port);
  match Unix.inet_addr_of_string host with
  | ip -> [ Unix.ADDR_INET (ip, port) ]
  | exception Failure _ -> (
      (* One socket type, or each address would come once per type. *)
      let infos =
        getaddrinfo ?pool host (string_of_int port)
          [ Unix.AI_SOCKTYPE Unix.SOCK_STREAM ]
      in
      let addrs =
        List.fold_left
          (fun seen (info : Unix.addr_info) ->
            match info.ai_addr with
            | Unix.ADDR_INET _ as addr when not (List.mem addr seen) ->
                addr :: seen
            | Unix.ADDR_INET _ | Unix.ADDR_UNIX _ -> seen)
          [] infos
      in
      match List.rev addrs with [] -> raise (Unknown_host host) | l -> l)

let attempt ~sw ~attempt_timeout addr =
  match attempt_timeout with
  | None -> connect ~sw addr
  | Some seconds -> (
      match Time.timeout seconds (fun () -> connect ~sw addr) with
      | Some s -> s
      | None -> fail "connect" Unix.ETIMEDOUT)

let connect_any ~sw ?attempt_timeout addrs =
  let rec try_each = function
    | [] -> invalid_arg "Braid_io.Net.connect_any: no address"
    | [ addr ] -> attempt ~sw ~attempt_timeout addr
    | addr :: rest -> (
        (* Only a failed connection moves on: cancellation and other
           failures propagate at once. The last address's error is the
           one raised. *)
        match attempt ~sw ~attempt_timeout addr with
        | s -> s
        | exception Error { op = "connect"; _ } -> try_each rest)
  in
  try_each addrs

let connect_host ~sw ?pool ?attempt_timeout host port =
  connect_any ~sw ?attempt_timeout (resolve ?pool host port)
