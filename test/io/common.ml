(* Helpers shared by the IO tests. *)

open Braid_io

let loopback = Net.tcp "127.0.0.1" 0

let port_of = function
  | Unix.ADDR_INET (_, port) -> port
  | Unix.ADDR_UNIX _ -> invalid_arg "port_of: a Unix-domain address"

(* Reads exactly [n] bytes, or fails on a premature end of stream. *)
let read_exactly s buf n =
  let rec go off =
    if off < n then
      match Net.read_into s buf off (n - off) with
      | 0 -> Alcotest.failf "end of stream after %d of %d bytes" off n
      | k -> go (off + k)
  in
  go 0

let rec echo client =
  let buf = Bytes.create 4096 in
  match Net.read_into client buf 0 4096 with
  | 0 -> ()
  | n ->
      Net.write_all client buf 0 n;
      echo client

(* Runs [f addr] while an echo server serves [addr], then stops the server
   (cancelling its fiber, which closes every connection it still has). *)
let with_echo_server f =
  Switch.run @@ fun sw ->
  let listener = Net.listen ~sw loopback in
  let server =
    Fiber.fork ~sw (fun () ->
        Switch.run (fun sw ->
            while true do
              Net.accept_fork ~sw ~on_error:raise listener (fun client _ ->
                  echo client)
            done))
  in
  let result = f (Net.local_addr listener) in
  Fiber.cancel server;
  (match Fiber.join server with () -> () | exception Braid.Cancelled -> ());
  result

(* A test that hangs instead of failing is no test: bound every scenario.
   The bound is generous (a loaded 2-core machine), and never a timing
   assertion: passing tests finish long before it. *)
let watchdogs = Domain.DLS.new_key (fun () -> ref 0)

let within ?(seconds = 40.) name f =
  let active = Domain.DLS.get watchdogs in
  incr active;
  match
    Fun.protect
      ~finally:(fun () -> decr active)
      (fun () -> Time.timeout seconds f)
  with
  | Some v -> v
  | None -> Alcotest.failf "%s: still not done after %.0f s" name seconds

(* Waits (in a fiber) until [condition ()] holds. *)
let eventually what condition =
  within what @@ fun () ->
  while not (condition ()) do
    Time.sleep 0.001
  done

(* Runs [f ()] while a ticker fiber asks to wake every [every] seconds, and
   returns its result with the longest gap between two wake-ups, in
   milliseconds: a call that blocks the loop shows as a gap that long. *)
let with_ticker ?(every = 0.002) f =
  Switch.run @@ fun sw ->
  let stop = ref false and longest = ref 0 in
  let ticker =
    Fiber.fork ~sw (fun () ->
        let last = ref (Time.now_ns ()) in
        while not !stop do
          Time.sleep every;
          let now = Time.now_ns () in
          longest := max !longest (now - !last);
          last := now
        done)
  in
  let result = f () in
  stop := true;
  Fiber.join ticker;
  (result, !longest / 1_000_000)

(* The bound is generous for a loaded machine; a stall is far longer. *)
let check_no_stall ~bound_ms longest_ms =
  Alcotest.(check bool)
    (Printf.sprintf "longest gap between ticks %d ms < %d ms" longest_ms
       bound_ms)
    true (longest_ms < bound_ms)

(* Fibers waiting for descriptors, and pending timers of the current loop
   other than [within]'s. *)
let waiters () =
  let s = Braid_io.stats () in
  (s.fd_waiters, s.timers - !(Domain.DLS.get watchdogs))

let check_no_waiters what =
  Alcotest.(check (pair int int))
    (what ^ ": no waiter left")
    (0, 0) (waiters ())

(* Lets every runnable fiber run until none is: a fiber that was woken has
   then reacted. *)
let settle () =
  for _ = 1 to 10 do
    Fiber.yield ()
  done

(* How a one-byte read ends, as a value: a fiber on a switch must not raise
   what the test expects, or it would fail the switch. *)
let read_outcome s =
  match Net.read_into s (Bytes.create 1) 0 1 with
  | n -> Printf.sprintf "read %d" n
  | exception Io_error { op = "read"; error = Unix.EBADF; detail = "" } ->
      "EBADF"
  | exception (Io_error _ as e) -> Option.get (Braid_io.error_message e)

let open_fds () = Array.length (Sys.readdir "/proc/self/fd")
