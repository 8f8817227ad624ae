(* The epoll and eventfd stubs, called directly (no event loop). *)

module Epoll = Braid_io.Private.Epoll

let with_epoll f =
  let ep = Epoll.create () in
  Fun.protect ~finally:(fun () -> Epoll.close ep) (fun () -> f ep)

let with_pipe f =
  let r, w = Unix.pipe ~cloexec:true () in
  Fun.protect
    ~finally:(fun () ->
      Unix.close r;
      Unix.close w)
    (fun () -> f r w)

let write_byte fd = ignore (Unix.write_substring fd "x" 0 1)
let events = Epoll.events 16

let only_event ep ~timeout_ms =
  match Epoll.wait ep events ~timeout_ms with
  | 1 -> (Epoll.token events 0, Epoll.flags events 0)
  | n -> Alcotest.failf "expected one event, got %d" n

let readable_pipe () =
  with_epoll @@ fun ep ->
  with_pipe @@ fun r w ->
  Epoll.add ep r Epoll.readable ~token:42;
  Alcotest.(check int)
    "nothing to read yet" 0
    (Epoll.wait ep events ~timeout_ms:0);
  write_byte w;
  let token, flags = only_event ep ~timeout_ms:(-1) in
  Alcotest.(check int) "the token comes back" 42 token;
  Alcotest.(check bool) "readable" true (flags land Epoll.readable <> 0);
  Alcotest.(check bool) "not an error" true (flags land Epoll.error = 0)

let timeout_expires () =
  with_epoll @@ fun ep ->
  with_pipe @@ fun r _ ->
  Epoll.add ep r Epoll.readable ~token:1;
  Alcotest.(check int)
    "a 20 ms wait with nothing ready" 0
    (Epoll.wait ep events ~timeout_ms:20)

let level_and_edge () =
  with_epoll @@ fun ep ->
  with_pipe @@ fun r w ->
  Epoll.add ep r Epoll.readable ~token:1;
  write_byte w;
  ignore (only_event ep ~timeout_ms:0);
  ignore (only_event ep ~timeout_ms:0);
  (* Level-triggered: still reported while unread. Edge-triggered: once. *)
  Epoll.modify ep r Epoll.(readable lor edge_triggered) ~token:2;
  let token, _ = only_event ep ~timeout_ms:0 in
  Alcotest.(check int) "modified token" 2 token;
  Alcotest.(check int) "no second edge" 0 (Epoll.wait ep events ~timeout_ms:0);
  write_byte w;
  ignore (only_event ep ~timeout_ms:0)

let removed_is_silent () =
  with_epoll @@ fun ep ->
  with_pipe @@ fun r w ->
  Epoll.add ep r Epoll.readable ~token:1;
  Epoll.remove ep r;
  write_byte w;
  Alcotest.(check int)
    "no event after remove" 0
    (Epoll.wait ep events ~timeout_ms:0)

let writable_and_hang_up () =
  with_epoll @@ fun ep ->
  let r, w = Unix.pipe ~cloexec:true () in
  Epoll.add ep w Epoll.writable ~token:7;
  let _, flags = only_event ep ~timeout_ms:0 in
  Alcotest.(check bool)
    "an empty pipe is writable" true
    (flags land Epoll.writable <> 0);
  Epoll.remove ep w;
  Epoll.add ep r Epoll.readable ~token:8;
  Unix.close w;
  let _, flags = only_event ep ~timeout_ms:0 in
  Alcotest.(check bool)
    "closing the writer hangs up the reader" true
    (flags land Epoll.hang_up <> 0);
  Unix.close r

let errors_are_unix_errors () =
  with_epoll @@ fun ep ->
  with_pipe @@ fun r _ ->
  Epoll.add ep r Epoll.readable ~token:1;
  Alcotest.check_raises "adding twice"
    (Unix.Unix_error (Unix.EEXIST, "epoll_ctl", ""))
    (fun () -> Epoll.add ep r Epoll.readable ~token:1)

let many_events () =
  with_epoll @@ fun ep ->
  let pipes = List.init 40 (fun _ -> Unix.pipe ~cloexec:true ()) in
  List.iteri
    (fun i (r, w) ->
      Epoll.add ep r Epoll.readable ~token:i;
      write_byte w)
    pipes;
  let small = Epoll.events 16 in
  Alcotest.(check int) "fills the buffer" 16 (Epoll.wait ep small ~timeout_ms:0);
  let big = Epoll.events 64 in
  let n = Epoll.wait ep big ~timeout_ms:0 in
  Alcotest.(check int) "all pipes readable" 40 n;
  let tokens = List.sort compare (List.init n (Epoll.token big)) in
  Alcotest.(check (list int)) "every token once" (List.init 40 Fun.id) tokens;
  List.iter
    (fun (r, w) ->
      Unix.close r;
      Unix.close w)
    pipes

let eventfd_wakes_a_blocked_wait () =
  with_epoll @@ fun ep ->
  let efd = Epoll.eventfd () in
  Epoll.add ep efd Epoll.readable ~token:3;
  Alcotest.(check int) "quiet at first" 0 (Epoll.wait ep events ~timeout_ms:0);
  (* Another domain signals while this one is blocked with no timeout. *)
  let signaller =
    Domain.spawn (fun () ->
        Unix.sleepf 0.02;
        Epoll.eventfd_signal efd)
  in
  let token, _ = only_event ep ~timeout_ms:(-1) in
  Domain.join signaller;
  Alcotest.(check int) "woken by the eventfd" 3 token;
  Epoll.eventfd_signal efd;
  Epoll.eventfd_drain efd;
  Alcotest.(check int)
    "quiet once drained" 0
    (Epoll.wait ep events ~timeout_ms:0);
  Epoll.eventfd_drain efd;
  Unix.close efd

let () =
  let case name f = Alcotest.test_case name `Quick f in
  Alcotest.run "epoll"
    [
      ( "stubs",
        [
          case "a pipe becomes readable" readable_pipe;
          case "a timeout expires with no event" timeout_expires;
          case "level- and edge-triggered" level_and_edge;
          case "a removed descriptor is silent" removed_is_silent;
          case "writable, and hang-up" writable_and_hang_up;
          case "errors are Unix errors" errors_are_unix_errors;
          case "many events, small buffer" many_events;
          case "an eventfd wakes a blocked wait" eventfd_wakes_a_blocked_wait;
        ] );
    ]
