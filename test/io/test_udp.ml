(* UDP sockets (datagrams with addresses over IPv4 and IPv6, many fibers at
   once, cancellation, truncation, close, errors, descriptors) and name
   resolution (host names, literals, unknown names, cancellation, connecting
   to the first address that answers). Loopback only. *)

open Braid_io
open Common

let sockaddr =
  Alcotest.testable
    (fun ppf -> function
      | Unix.ADDR_INET (ip, port) ->
          Fmt.pf ppf "%s:%d" (Unix.string_of_inet_addr ip) port
      | Unix.ADDR_UNIX path -> Fmt.pf ppf "unix:%s" path)
    ( = )

(* How an operation ends, as a value: a fiber on a switch must not raise what
   the test expects, or it would fail the switch. *)
let outcome f =
  match f () with
  | _ -> "returned"
  | exception Io_error { op; error; detail = "" } ->
      Printf.sprintf "%s: %s" op (Unix.error_message error)
  | exception Braid.Cancelled -> "cancelled"

let error op error = Printf.sprintf "%s: %s" op (Unix.error_message error)

let send_string s addr str =
  Udp.send_to s addr (Bytes.of_string str) 0 (String.length str)

(* The next datagram as a string and its source. *)
let receive_string ?(size = 2048) s =
  let buf = Bytes.create size in
  let got = Udp.receive_from s buf 0 size in
  Alcotest.(check bool) "not truncated" false got.truncated;
  (Bytes.sub_string buf 0 got.length, got.source)

(* Echoes every datagram back to its sender, in [fibers] fibers receiving on
   the one socket, until cancelled. *)
let serve_echo ~sw ?(fibers = 1) server =
  List.init fibers (fun _ ->
      Fiber.fork ~sw (fun () ->
          let buf = Bytes.create 2048 in
          while true do
            let got = Udp.receive_from server buf 0 2048 in
            Udp.send_to server got.source buf 0 got.length
          done))

let stop fibers =
  List.iter Fiber.cancel fibers;
  List.iter
    (fun f ->
      match Fiber.join f with () -> () | exception Braid.Cancelled -> ())
    fibers

(* Datagrams to an echo server from an unbound socket and from a connected
   one: contents and both addresses checked. *)
let echo_over family ip =
  run @@ fun () ->
  within "echo" @@ fun () ->
  Switch.run @@ fun sw ->
  let server = Udp.bind ~sw (Udp.addr ip 0) in
  let server_addr = Udp.local_addr server in
  let echo = serve_echo ~sw server in
  let client = Udp.create ~sw family in
  for i = 1 to 5 do
    let message = Printf.sprintf "datagram %d" i in
    send_string client server_addr message;
    let reply, source = receive_string client in
    Alcotest.(check string) "echoed" message reply;
    Alcotest.check sockaddr "from the server" server_addr source
  done;
  (match Udp.local_addr client with
  | Unix.ADDR_INET (ip, port) ->
      Alcotest.(check bool) "bound by its first send" true (port <> 0);
      Alcotest.(check bool)
        "on the wildcard address" true
        (ip = Unix.inet_addr_any || ip = Unix.inet6_addr_any)
  | Unix.ADDR_UNIX _ -> Alcotest.fail "a Unix-domain address");
  let connected = Udp.bind ~sw (Udp.addr ip 0) in
  Udp.connect connected server_addr;
  Udp.send connected (Bytes.of_string "connected") 0 9;
  Alcotest.(check (pair string sockaddr))
    "echo to a connected socket" ("connected", server_addr)
    (receive_string connected);
  stop echo

let ipv4 () = echo_over `Ipv4 "127.0.0.1"

let ipv6 () =
  match echo_over `Ipv6 "::1" with
  | () -> ()
  | exception
      Io_error
        {
          op = "bind";
          error = Unix.EADDRNOTAVAIL | Unix.EAFNOSUPPORT;
          detail = "";
        } ->
      Printf.printf "IPv6 loopback unavailable here: skipped\n"

(* 100 client fibers, a socket each, ping-pong 20 datagrams with one server
   socket that 4 fibers receive on, while a ticker fiber ticks every 2 ms. The
   loop must never stall: the bound (250 ms between ticks) is generous for a
   loaded machine; the exchange itself takes a few milliseconds. *)
let many_fibers () =
  run @@ fun () ->
  within "100 fibers" @@ fun () ->
  Switch.run @@ fun sw ->
  let server = Udp.bind ~sw (Udp.addr "127.0.0.1" 0) in
  let server_addr = Udp.local_addr server in
  let echo = serve_echo ~sw ~fibers:4 server in
  let total, longest =
    with_ticker @@ fun () ->
    let clients =
      List.init 100 (fun i ->
          Fiber.fork ~sw (fun () ->
              Switch.run @@ fun sw ->
              let s = Udp.create ~sw `Ipv4 in
              for j = 1 to 20 do
                let message = Printf.sprintf "%d.%d" i j in
                send_string s server_addr message;
                let reply, source = receive_string s in
                if reply <> message || source <> server_addr then
                  Alcotest.failf "client %d got %S for %S" i reply message
              done;
              20))
    in
    List.fold_left (fun n c -> n + Fiber.join c) 0 clients
  in
  stop echo;
  Alcotest.(check int) "every reply" 2000 total;
  check_no_stall ~bound_ms:250 longest

(* A receive cut short by a timeout leaves no registration and takes no
   datagram: the next one still reaches the next receive. *)
let cancelled_receive () =
  run @@ fun () ->
  within "cancelled receive" @@ fun () ->
  Switch.run @@ fun sw ->
  let s = Udp.bind ~sw (Udp.addr "127.0.0.1" 0) in
  let buf = Bytes.create 16 in
  Alcotest.(check bool)
    "timed out" true
    (Time.timeout 0.01 (fun () -> Udp.receive_from s buf 0 16) = None);
  check_no_waiters "after the timeout";
  let sender = Udp.create ~sw `Ipv4 in
  send_string sender (Udp.local_addr s) "after";
  Alcotest.(check string) "the next datagram" "after" (fst (receive_string s));
  (* Cancelled by its fiber's cancellation rather than a timeout. *)
  let receiver =
    Fiber.fork ~sw (fun () -> outcome (fun () -> Udp.receive_from s buf 0 16))
  in
  settle ();
  Alcotest.(check int) "one waiter" 1 (fst (waiters ()));
  Fiber.cancel receiver;
  Alcotest.(check string) "woken" "cancelled" (Fiber.join receiver);
  check_no_waiters "after the cancellation"

(* A datagram longer than the buffer is cut, says so, and its tail is lost:
   the next receive gets the next datagram. Empty datagrams exist. *)
let truncation () =
  run @@ fun () ->
  within "truncation" @@ fun () ->
  Switch.run @@ fun sw ->
  let s = Udp.bind ~sw (Udp.addr "127.0.0.1" 0) in
  let addr = Udp.local_addr s in
  let sender = Udp.create ~sw `Ipv4 in
  send_string sender addr (String.make 100 'a');
  send_string sender addr "bbbbb";
  send_string sender addr "";
  (* The loop takes the readiness event of the three arrivals before any is
     read: none follows, so each receive must find the next datagram without
     one (a short datagram does not mean the socket is drained). *)
  Fd.await_readable (s :> Fd.t);
  let buf = Bytes.make 20 '.' in
  let got = Udp.receive_from s buf 5 10 in
  Alcotest.(check (pair int bool))
    "cut to the buffer" (10, true)
    (got.length, got.truncated);
  Alcotest.(check string)
    "its first bytes, at the offset" ".....aaaaaaaaaa....."
    (Bytes.to_string buf);
  let got = Udp.receive_from s buf 0 20 in
  Alcotest.(check (pair int bool))
    "the next datagram" (5, false)
    (got.length, got.truncated);
  Alcotest.(check string) "whole" "bbbbb" (Bytes.sub_string buf 0 5);
  let got = Udp.receive_from s buf 0 20 in
  Alcotest.(check (pair int bool))
    "an empty datagram" (0, false)
    (got.length, got.truncated);
  Alcotest.(check int)
    "from the sender's port"
    (port_of (Udp.local_addr sender))
    (port_of got.source);
  send_string sender addr "x";
  let got = Udp.receive_from s buf 0 0 in
  Alcotest.(check (pair int bool))
    "into no room" (0, true)
    (got.length, got.truncated)

(* Closing a socket wakes its receiver with EBADF; later calls fail alike. *)
let close_wakes_receiver () =
  run @@ fun () ->
  within "close" @@ fun () ->
  Switch.run @@ fun sw ->
  let s = Udp.bind ~sw (Udp.addr "127.0.0.1" 0) in
  let receiver =
    Fiber.fork ~sw (fun () ->
        outcome (fun () -> Udp.receive_from s (Bytes.create 8) 0 8))
  in
  settle ();
  Udp.close s;
  Alcotest.(check string)
    "the receiver"
    (error "receive_from" EBADF)
    (Fiber.join receiver);
  check_no_waiters "after close";
  Alcotest.(check string)
    "a later receive"
    (error "receive_from" EBADF)
    (outcome (fun () -> Udp.receive_from s (Bytes.create 8) 0 8));
  Alcotest.(check string)
    "a later send" (error "send_to" EBADF)
    (outcome (fun () -> send_string s (Udp.addr "127.0.0.1" 9) "too late"));
  Udp.close s

let errors () =
  run @@ fun () ->
  within "errors" @@ fun () ->
  Switch.run @@ fun sw ->
  let s = Udp.bind ~sw (Udp.addr "127.0.0.1" 0) in
  let addr = Udp.local_addr s in
  Alcotest.(check string)
    "the address is taken" (error "bind" EADDRINUSE)
    (outcome (fun () -> Udp.bind ~sw addr));
  Switch.run (fun sw ->
      let shared = Udp.bind ~sw ~reuse_port:true (Udp.addr "127.0.0.1" 0) in
      let again = Udp.bind ~sw ~reuse_port:true (Udp.local_addr shared) in
      Alcotest.check sockaddr "reuse_port shares the address"
        (Udp.local_addr shared) (Udp.local_addr again));
  let big = Bytes.create 70_000 in
  Alcotest.(check string)
    "too large" (error "send_to" EMSGSIZE)
    (outcome (fun () -> Udp.send_to s addr big 0 70_000));
  Alcotest.(check string)
    "the other family"
    (error "send_to" EAFNOSUPPORT)
    (outcome (fun () -> send_string s (Udp.addr "::1" 9) "x"));
  Alcotest.check_raises "a Unix-domain address"
    (Invalid_argument "Braid_io.Udp.bind: a Unix-domain address") (fun () ->
      ignore (Udp.bind ~sw (Unix.ADDR_UNIX "/nowhere")));
  Alcotest.check_raises "a bad range"
    (Invalid_argument "Braid_io.Udp.receive_from: invalid range") (fun () ->
      ignore (Udp.receive_from s (Bytes.create 4) 2 3));
  (* A connected socket learns from ICMP that its peer's port is closed: a
     port just released, on loopback, where the ICMP error comes back at
     once. *)
  let closed_port =
    Switch.run (fun sw ->
        Udp.local_addr (Udp.bind ~sw (Udp.addr "127.0.0.1" 0)))
  in
  let c = Udp.create ~sw `Ipv4 in
  Udp.connect c closed_port;
  Udp.send c (Bytes.of_string "anyone?") 0 7;
  Alcotest.(check string)
    "the peer's port is closed"
    (error "receive_from" ECONNREFUSED)
    (outcome (fun () -> Udp.receive_from c (Bytes.create 8) 0 8))

(* 1,000 sockets in switches that finish leave the descriptor count as it
   was, during the loop and after it. *)
let no_fd_leak () =
  let before_loop = open_fds () in
  run (fun () ->
      within "1,000 sockets" @@ fun () ->
      let before = open_fds () in
      for _ = 1 to 100 do
        Switch.run (fun sw ->
            let server = Udp.bind ~sw (Udp.addr "127.0.0.1" 0) in
            for _ = 1 to 9 do
              let s = Udp.create ~sw `Ipv4 in
              send_string s (Udp.local_addr server) "x";
              ignore (receive_string server)
            done)
      done;
      Alcotest.(check int) "descriptors during the loop" before (open_fds ()));
  Alcotest.(check int) "descriptors after the loop" before_loop (open_fds ())

(* Name resolution. *)

let is_loopback = function
  | Unix.ADDR_INET (ip, _) ->
      ip = Unix.inet_addr_loopback || ip = Unix.inet6_addr_loopback
  | Unix.ADDR_UNIX _ -> false

let localhost () =
  run @@ fun () ->
  within "localhost" @@ fun () ->
  let addrs = Net.resolve "localhost" 8080 in
  Alcotest.(check bool) "some address" true (addrs <> []);
  List.iter
    (fun addr ->
      match addr with
      | Unix.ADDR_INET (_, 8080) when is_loopback addr -> ()
      | other ->
          Alcotest.failf "not a loopback address with the port: %a"
            (Alcotest.pp sockaddr) other)
    addrs;
  Alcotest.(check int)
    "no duplicates"
    (List.length (List.sort_uniq compare addrs))
    (List.length addrs);
  with_echo_server @@ fun addr ->
  Switch.run @@ fun sw ->
  let s = Net.connect_host ~sw "localhost" (port_of addr) in
  Net.write_string s "by name";
  let buf = Bytes.create 7 in
  read_exactly s buf 7;
  Alcotest.(check string) "echoed" "by name" (Bytes.to_string buf)

(* A literal is its own address: resolving it must not use the pool, which
   here refuses every call. *)
let literals () =
  let pool = Blocking.create () in
  Blocking.shutdown pool;
  run @@ fun () ->
  Alcotest.(check (list sockaddr))
    "IPv4"
    [ Udp.addr "127.0.0.1" 53 ]
    (Net.resolve ~pool "127.0.0.1" 53);
  Alcotest.(check (list sockaddr))
    "IPv6"
    [ Udp.addr "::1" 53 ]
    (Net.resolve ~pool "::1" 53);
  Alcotest.check_raises "a port out of range"
    (Invalid_argument "Braid_io.Net.resolve: port 65536") (fun () ->
      ignore (Net.resolve "localhost" 65536))

let unknown_host () =
  run @@ fun () ->
  within "unknown host" @@ fun () ->
  let name = "no-such-host.invalid" in
  Alcotest.check_raises "resolve" (Net.Unknown_host name) (fun () ->
      ignore (Net.resolve name 80));
  Alcotest.check_raises "connect_host" (Net.Unknown_host name) (fun () ->
      Switch.run (fun sw -> ignore (Net.connect_host ~sw name 80)));
  Alcotest.(check int)
    "getaddrinfo finds nothing" 0
    (List.length (Net.getaddrinfo name "80" []))

(* A lookup queued behind a busy pool thread is cancelled at once, by a
   timeout or by its fiber's cancellation, and leaves no waiter. *)
let cancelled_resolution () =
  let pool = Blocking.create ~max_threads:1 () in
  Fun.protect ~finally:(fun () -> Blocking.shutdown pool) @@ fun () ->
  run @@ fun () ->
  within "cancelled resolution" @@ fun () ->
  let gate = Mutex.create () and opened = Condition.create () in
  let is_open = ref false in
  let eventually condition =
    while not (condition ()) do
      Time.sleep 0.001
    done
  in
  Switch.run @@ fun sw ->
  let busy =
    Fiber.fork ~sw (fun () ->
        Blocking.run ~pool (fun () ->
            Mutex.protect gate (fun () ->
                while not !is_open do
                  Condition.wait opened gate
                done)))
  in
  eventually (fun () -> (Blocking.stats pool).busy = 1);
  let resolver =
    Fiber.fork ~sw (fun () ->
        outcome (fun () -> Net.resolve ~pool "localhost" 80))
  in
  eventually (fun () -> (Blocking.stats pool).queued = 1);
  Fiber.cancel resolver;
  Alcotest.(check string) "woken at once" "cancelled" (Fiber.join resolver);
  Alcotest.(check bool)
    "timed out" true
    (Time.timeout 0.01 (fun () -> Net.connect_host ~sw ~pool "localhost" 80)
    = None);
  check_no_waiters "after the timeout";
  Mutex.protect gate (fun () ->
      is_open := true;
      Condition.broadcast opened);
  Fiber.join busy;
  Alcotest.(check bool)
    "the pool still resolves" true
    (Net.resolve ~pool "localhost" 80 <> [])

(* A port that refuses connections: one a listener had a moment ago. *)
let refused_addr () =
  Switch.run (fun sw -> Net.local_addr (Net.listen ~sw loopback))

let connect_any () =
  run @@ fun () ->
  within "connect_any" @@ fun () ->
  with_echo_server @@ fun good ->
  let refused = refused_addr () in
  Switch.run @@ fun sw ->
  let s = Net.connect_any ~sw [ refused; good ] in
  Alcotest.check sockaddr "past the refusal" good (Net.peer_addr s);
  Alcotest.(check string)
    "all refused: the last error"
    (error "connect" ECONNREFUSED)
    (match Net.connect_any ~sw [ refused; refused ] with
    | _ -> "returned"
    | exception Io_error { op; error; detail = "" } ->
        Printf.sprintf "%s: %s" op (Unix.error_message error));
  Alcotest.check_raises "no address"
    (Invalid_argument "Braid_io.Net.connect_any: no address") (fun () ->
      ignore (Net.connect_any ~sw []))

(* An attempt that hangs gives way after [attempt_timeout]. A listener with
   a backlog of 0 and one connection queued drops the next handshakes
   (Linux), so a connect to it hangs. *)
let attempt_timeout () =
  run @@ fun () ->
  within "attempt_timeout" @@ fun () ->
  with_echo_server @@ fun good ->
  Switch.run @@ fun sw ->
  let full = Net.listen ~sw ~backlog:0 loopback in
  let full_addr = Net.local_addr full in
  ignore (Net.connect ~sw full_addr);
  Alcotest.(check string)
    "a hanging attempt"
    (error "connect" ETIMEDOUT)
    (match Net.connect_any ~sw ~attempt_timeout:0.1 [ full_addr ] with
    | _ -> "returned"
    | exception Io_error { op; error; detail = "" } ->
        Printf.sprintf "%s: %s" op (Unix.error_message error));
  let s = Net.connect_any ~sw ~attempt_timeout:0.1 [ full_addr; good ] in
  Alcotest.check sockaddr "the next address" good (Net.peer_addr s);
  (* Whether the echo server's acceptor has run yet depends on the order in
     which the poller reported the listener and [s]: once it has, it waits
     again, and so does the reader of its connection. Nothing else may. *)
  settle ();
  Alcotest.(check (pair int int))
    "after the attempts: only the echo server's acceptor and reader wait" (2, 0)
    (waiters ())

let () =
  let case name f = Alcotest.test_case name `Quick f in
  Alcotest.run "udp"
    [
      ( "udp",
        [
          case "IPv4 echo" ipv4;
          case "IPv6 echo" ipv6;
          case "100 fibers, the loop keeps running" many_fibers;
          case "cancelled receive" cancelled_receive;
          case "truncation" truncation;
          case "close wakes a receiver" close_wakes_receiver;
          case "errors" errors;
          case "no descriptor leak" no_fd_leak;
        ] );
      ( "names",
        [
          case "localhost" localhost;
          case "literals" literals;
          case "unknown host" unknown_host;
          case "cancelled resolution" cancelled_resolution;
          case "connect_any" connect_any;
          case "attempt_timeout" attempt_timeout;
        ] );
    ]
