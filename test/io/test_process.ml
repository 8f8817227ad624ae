(* Child processes: real programs (sh, cat, echo, env, pwd, sleep) started
   from IO fibers. *)

open Braid_io
open Common

let status =
  Alcotest.testable
    (fun ppf -> function
      | Unix.WEXITED n -> Fmt.pf ppf "WEXITED %d" n
      | WSIGNALED s -> Fmt.pf ppf "WSIGNALED %d" s
      | WSTOPPED s -> Fmt.pf ppf "WSTOPPED %d" s)
    ( = )

let read_all fd =
  let out = Buffer.create 256 in
  let chunk = Bytes.create 4096 in
  let rec go () =
    match Fd.read_into fd chunk 0 4096 with
    | 0 -> Buffer.contents out
    | n ->
        Buffer.add_subbytes out chunk 0 n;
        go ()
  in
  go ()

(* Whether [pid] names a process, a zombie included. *)
let exists pid =
  match Unix.kill pid 0 with
  | () -> true
  | exception Unix.Unix_error (Unix.ESRCH, _, _) -> false

let echo_through_stdout () =
  run @@ fun () ->
  within "echo" @@ fun () ->
  Switch.run @@ fun sw ->
  let p = Process.spawn ~sw ~stdout:`Pipe "echo" [ "hello"; "world" ] in
  Alcotest.(check string) "output" "hello world\n" (read_all (Process.stdout p));
  Alcotest.check status "status" (WEXITED 0) (Process.await p);
  Alcotest.check status "awaited again" (WEXITED 0) (Process.await p)

(* More than a socket buffer each way, written and read by two fibers. *)
let cat_round_trip () =
  run @@ fun () ->
  within "cat" @@ fun () ->
  Switch.run @@ fun sw ->
  let p = Process.spawn ~sw ~stdin:`Pipe ~stdout:`Pipe "cat" [] in
  let input = String.init 1_000_000 (fun i -> Char.chr (i mod 251)) in
  let writer =
    Fiber.fork ~sw (fun () ->
        Fd.write_string (Process.stdin p) input;
        Fd.close (Process.stdin p))
  in
  let echoed = read_all (Process.stdout p) in
  Fiber.join writer;
  Alcotest.(check int) "length" (String.length input) (String.length echoed);
  Alcotest.(check bool) "same bytes" true (String.equal input echoed);
  Alcotest.check status "status" (WEXITED 0) (Process.await p)

let stderr_is_separate () =
  run @@ fun () ->
  within "stderr" @@ fun () ->
  Switch.run @@ fun sw ->
  let p =
    Process.spawn ~sw ~stdout:`Pipe ~stderr:`Pipe "sh"
      [ "-c"; "echo out; echo err >&2; echo more" ]
  in
  let err = Fiber.fork ~sw (fun () -> read_all (Process.stderr p)) in
  Alcotest.(check string) "stdout" "out\nmore\n" (read_all (Process.stdout p));
  Alcotest.(check string) "stderr" "err\n" (Fiber.join err);
  Alcotest.check status "status" (WEXITED 0) (Process.await p)

let exit_codes () =
  run @@ fun () ->
  within "exit codes" @@ fun () ->
  Switch.run @@ fun sw ->
  List.iter
    (fun code ->
      let p = Process.spawn ~sw "sh" [ "-c"; Printf.sprintf "exit %d" code ] in
      Alcotest.check status
        (Printf.sprintf "exit %d" code)
        (WEXITED code) (Process.await p))
    [ 0; 1; 3; 255 ]

let killed_by_signal () =
  run @@ fun () ->
  within "signals" @@ fun () ->
  Switch.run @@ fun sw ->
  let p = Process.spawn ~sw "sleep" [ "100" ] in
  Alcotest.(check (option status)) "running" None (Process.status p);
  Process.kill p;
  Alcotest.check status "SIGKILL" (WSIGNALED Sys.sigkill) (Process.await p);
  Alcotest.(check bool) "reaped" false (exists (Process.pid p));
  (* Signalling a reaped process does nothing (its pid is no longer ours). *)
  Process.signal p Sys.sigterm;
  let p = Process.spawn ~sw "sleep" [ "100" ] in
  Process.signal p Sys.sigterm;
  Alcotest.check status "SIGTERM" (WSIGNALED Sys.sigterm) (Process.await p);
  (* The child does not inherit an ignored signal. *)
  let previous = Sys.signal Sys.sigterm Sys.Signal_ignore in
  let p =
    Fun.protect
      ~finally:(fun () -> Sys.set_signal Sys.sigterm previous)
      (fun () -> Process.spawn ~sw "sleep" [ "100" ])
  in
  Process.signal p Sys.sigterm;
  Alcotest.check status "default disposition" (WSIGNALED Sys.sigterm)
    (Process.await p)

let working_directory () =
  run @@ fun () ->
  within "cwd" @@ fun () ->
  let dir = Unix.realpath (Filename.get_temp_dir_name ()) in
  let dir = if Sys.getcwd () = dir then "/" else dir in
  let st, out = Process.output ~cwd:dir "pwd" [] in
  Alcotest.check status "status" (WEXITED 0) st;
  Alcotest.(check string) "pwd" (dir ^ "\n") out;
  (* A relative program path is relative to [cwd]. *)
  let st, out = Process.output ~cwd:"/bin" "./echo" [ "relative" ] in
  Alcotest.check status "./echo" (WEXITED 0) st;
  Alcotest.(check string) "./echo output" "relative\n" out

let environment () =
  run @@ fun () ->
  within "env" @@ fun () ->
  let st, out = Process.output ~env:[| "FOO=bar"; "EMPTY=" |] "env" [] in
  Alcotest.check status "status" (WEXITED 0) st;
  Alcotest.(check (list string))
    "only the given variables" [ "EMPTY="; "FOO=bar" ]
    (List.sort compare
       (List.filter (( <> ) "") (String.split_on_char '\n' out)));
  (* By default, this program's environment. *)
  Unix.putenv "BRAID_TEST_PROCESS" "inherited";
  let _, out = Process.output "sh" [ "-c"; "echo $BRAID_TEST_PROCESS" ] in
  Alcotest.(check string) "inherited" "inherited\n" out

let missing_program () =
  run @@ fun () ->
  within "missing" @@ fun () ->
  let before = open_fds () in
  Switch.run (fun sw ->
      let spawn prog =
        match
          Process.spawn ~sw ~stdin:`Pipe ~stdout:`Pipe ~stderr:`Pipe prog []
        with
        | _ -> Alcotest.failf "%s started" prog
        | exception Io_error { op; error; detail } -> (error, op, detail)
      in
      let error =
        Alcotest.testable (Fmt.of_to_string Unix.error_message) ( = )
      in
      Alcotest.(check (triple error string string))
        "not in PATH"
        (Unix.ENOENT, "posix_spawn", "braid-no-such-program")
        (spawn "braid-no-such-program");
      Alcotest.(check (triple error string string))
        "no such file"
        (Unix.ENOENT, "posix_spawn", "/nonexistent/prog")
        (spawn "/nonexistent/prog");
      let _, _, _ = spawn "/etc/passwd" in
      (match Process.spawn ~sw ~cwd:"/nonexistent" "true" [] with
      | _ -> Alcotest.fail "started in a missing directory"
      | exception
          Io_error { op = "posix_spawn"; error = Unix.ENOENT; detail = "true" }
        ->
          ());
      (match Process.spawn ~sw "echo" [ "a\000b" ] with
      | _ -> Alcotest.fail "a NUL byte was accepted"
      | exception Invalid_argument _ -> ());
      Alcotest.(check int) "no descriptor left open" before (open_fds ());
      (* The switch is still usable. *)
      Alcotest.check status "then a good one" (WEXITED 0)
        (Process.await (Process.spawn ~sw "true" [])));
  Alcotest.(check int) "no descriptor left open" before (open_fds ())

(* The descriptors of this program that a child inherits: those not
   close-on-exec (the test runner may pass some down to us). *)
let inheritable () =
  Sys.readdir "/proc/self/fd"
  |> Array.to_list
  |> List.filter (fun fd ->
         match
           In_channel.with_open_text
             ("/proc/self/fdinfo/" ^ fd)
             In_channel.input_all
         with
         | info ->
             let flags =
               List.find_map
                 (fun line -> Scanf.sscanf_opt line "flags: %o" Fun.id)
                 (String.split_on_char '\n' info)
             in
             Option.get flags land 0o2000000 = 0
         | exception Sys_error _ -> false (* the directory being read *))
  |> List.map int_of_string

(* Only 0, 1 and 2 reach the child (and what this program inherited
   itself), even while other children's pipes and pidfds are open. *)
let only_stdio_inherited () =
  run @@ fun () ->
  within "inherited" @@ fun () ->
  Switch.run @@ fun sw ->
  let _other =
    Process.spawn ~sw ~stdin:`Pipe ~stdout:`Pipe ~stderr:`Pipe "cat" []
  in
  let allowed = List.sort_uniq compare ([ 0; 1; 2 ] @ inheritable ()) in
  let st, out = Process.output "sh" [ "-c"; "ls /proc/$$/fd" ] in
  Alcotest.check status "status" (WEXITED 0) st;
  let fds =
    String.split_on_char '\n' out
    |> List.filter (( <> ) "")
    |> List.map int_of_string
  in
  Alcotest.(check (list int))
    "0, 1 and 2 are there" [ 0; 1; 2 ]
    (List.filter (fun fd -> fd < 3) fds);
  List.iter
    (fun fd ->
      if not (List.mem fd allowed) then
        Alcotest.failf "the child inherited descriptor %d" fd)
    fds

(* A detached child gets exactly the descriptors it is given, by number (a
   close-on-exec pipe as its 3, written by the child: never made inheritable
   in this process), and the caller reaps it. *)
let detached_descriptors () =
  run @@ fun () ->
  within "detached" @@ fun () ->
  let r, w = Unix.pipe ~cloexec:true () in
  let pid =
    Process.spawn_detached
      ~fds:[ Unix.stdin; Unix.stdout; Unix.stderr; w ]
      "sh"
      [ "-c"; "exec >&3; echo through-3; ls /proc/$$/fd" ]
  in
  Unix.close w;
  let ic = Unix.in_channel_of_descr r in
  let first = input_line ic in
  let rest = In_channel.input_all ic in
  close_in ic;
  (match Unix.waitpid [] pid with
  | _, WEXITED 0 -> ()
  | _ -> Alcotest.fail "the detached child failed");
  Alcotest.(check string) "written to its descriptor 3" "through-3" first;
  let fds =
    String.split_on_char '\n' rest
    |> List.filter (( <> ) "")
    |> List.map int_of_string
  in
  let allowed = List.sort_uniq compare ([ 0; 1; 2; 3 ] @ inheritable ()) in
  Alcotest.(check bool) "3 is there" true (List.mem 3 fds);
  List.iter
    (fun fd ->
      if not (List.mem fd allowed) then
        Alcotest.failf "the detached child has descriptor %d" fd)
    fds

let no_pipe () =
  run @@ fun () ->
  Switch.run @@ fun sw ->
  let p = Process.spawn ~sw ~stdout:`Null "echo" [ "discarded" ] in
  (match Process.stdout p with
  | _ -> Alcotest.fail "stdout of a child without a pipe"
  | exception Invalid_argument _ -> ());
  Alcotest.check status "status" (WEXITED 0) (Process.await p)

(* A descriptor of the caller's: the child writes to a file. *)
let to_a_file () =
  run @@ fun () ->
  within "file" @@ fun () ->
  let path = Filename.temp_file "braid-process" ".txt" in
  Fun.protect ~finally:(fun () -> Sys.remove path) @@ fun () ->
  let file = Unix.openfile path [ O_WRONLY; O_TRUNC; O_CLOEXEC ] 0o600 in
  let st =
    Fun.protect
      ~finally:(fun () -> Unix.close file)
      (fun () ->
        Switch.run (fun sw ->
            Process.await
              (Process.spawn ~sw ~stdout:(`Fd file) ~stderr:(`Fd file) "sh"
                 [ "-c"; "echo to-file; echo err >&2" ])))
  in
  Alcotest.check status "status" (WEXITED 0) st;
  Alcotest.(check string)
    "file contents" "to-file\nerr\n"
    (In_channel.with_open_bin path In_channel.input_all)

(* The child's stdout is this program's descriptor 0 (a file here) while
   its stdin is a pipe: the pipe must not be put in place of descriptor 0
   before 0 is copied to the child's 1. *)
let crossed_descriptors () =
  run @@ fun () ->
  within "crossed" @@ fun () ->
  let path = Filename.temp_file "braid-process" ".txt" in
  Fun.protect ~finally:(fun () -> Sys.remove path) @@ fun () ->
  let saved = Unix.dup ~cloexec:true Unix.stdin in
  let file = Unix.openfile path [ O_WRONLY; O_TRUNC; O_CLOEXEC ] 0o600 in
  Unix.dup2 ~cloexec:true file Unix.stdin;
  Unix.close file;
  let st =
    Fun.protect
      ~finally:(fun () ->
        Unix.dup2 ~cloexec:false saved Unix.stdin;
        Unix.close saved)
      (fun () ->
        Switch.run (fun sw ->
            let p =
              Process.spawn ~sw ~stdin:`Pipe ~stdout:(`Fd Unix.stdin) "echo"
                [ "crossed" ]
            in
            Process.await p))
  in
  Alcotest.check status "status" (WEXITED 0) st;
  Alcotest.(check string)
    "file contents" "crossed\n"
    (In_channel.with_open_bin path In_channel.input_all)

(* Input written to a child that does not read it: EPIPE, not SIGPIPE. *)
let input () =
  run @@ fun () ->
  within "input" @@ fun () ->
  let st, out = Process.output ~input:"some input\n" "cat" [] in
  Alcotest.check status "cat" (WEXITED 0) st;
  Alcotest.(check string) "echoed" "some input\n" out;
  let st, out = Process.output ~input:(String.make 4_000_000 'x') "true" [] in
  Alcotest.check status "true" (WEXITED 0) st;
  Alcotest.(check string) "nothing" "" out;
  Switch.run @@ fun sw ->
  let p = Process.spawn ~sw ~stdin:`Pipe "true" [] in
  Alcotest.check status "true" (WEXITED 0) (Process.await p);
  match Fd.write_string (Process.stdin p) (String.make 1_000_000 'x') with
  | () -> Alcotest.fail "wrote to a child that exited"
  | exception Io_error { op = "write"; error = Unix.EPIPE | Unix.ECONNRESET; _ }
    ->
      ()

(* Common's ticker, every 5 ms, the gap in seconds. *)
let with_ticker f =
  let result, longest_ms = with_ticker ~every:0.005 f in
  (result, float longest_ms /. 1e3)

let stall_bound = 0.2

let many_at_once () =
  run @@ fun () ->
  within "many" @@ fun () ->
  let before = open_fds () in
  let outputs, longest =
    with_ticker (fun () ->
        Switch.run @@ fun sw ->
        let fibers =
          List.init 50 (fun i ->
              Fiber.fork ~sw (fun () ->
                  Process.output "sh"
                    [ "-c"; "sleep 0.2; echo $0"; string_of_int i ]))
        in
        List.map Fiber.join fibers)
  in
  List.iteri
    (fun i (st, out) ->
      Alcotest.check status "status" (WEXITED 0) st;
      Alcotest.(check string) "output" (Printf.sprintf "%d\n" i) out)
    outputs;
  if longest > stall_bound then
    Alcotest.failf "the loop stalled for %.3f s (bound %.1f s)" longest
      stall_bound;
  Alcotest.(check int) "no descriptor left open" before (open_fds ());
  check_no_waiters "many"

let cancelled_await () =
  run @@ fun () ->
  within "cancel" @@ fun () ->
  Switch.run @@ fun sw ->
  let p = Process.spawn ~sw "sleep" [ "100" ] in
  let waiter = Fiber.fork ~sw (fun () -> Process.await p) in
  settle ();
  Alcotest.(check int) "the fiber waits" 1 (fst (waiters ()));
  Fiber.cancel waiter;
  (match Fiber.join waiter with
  | _ -> Alcotest.fail "the cancelled await returned"
  | exception Braid.Cancelled -> ());
  check_no_waiters "after cancel";
  Alcotest.(check bool) "still running" true (Process.status p = None);
  (* Awaited again, by another fiber, after a kill. *)
  let waiter = Fiber.fork ~sw (fun () -> Process.await p) in
  settle ();
  Process.kill p;
  Alcotest.check status "killed" (WSIGNALED Sys.sigkill) (Fiber.join waiter)

let switch_end_kills () =
  run @@ fun () ->
  within "switch end" @@ fun () ->
  let before = open_fds () in
  let pids =
    Switch.run (fun sw ->
        List.init 5 (fun _ ->
            Process.pid
              (Process.spawn ~sw ~stdin:`Pipe ~stdout:`Pipe "sleep" [ "100" ])))
  in
  List.iter
    (fun pid ->
      Alcotest.(check bool) (Printf.sprintf "%d reaped" pid) false (exists pid))
    pids;
  (* A cancelled await, then the switch ends. *)
  let pid = ref 0 in
  (match
     Time.timeout 0.05 (fun () ->
         Switch.run @@ fun sw ->
         let p = Process.spawn ~sw "sleep" [ "100" ] in
         pid := Process.pid p;
         Process.await p)
   with
  | None -> ()
  | Some _ -> Alcotest.fail "sleep 100 ended within 50 ms");
  Alcotest.(check bool) "timed out: reaped" false (exists !pid);
  (* A failing fiber cancels its switch: same end. *)
  (match
     Switch.run (fun sw ->
         let p = Process.spawn ~sw "sleep" [ "100" ] in
         pid := Process.pid p;
         ignore (Fiber.fork ~sw (fun () -> failwith "boom"));
         Process.await p)
   with
  | _ -> Alcotest.fail "the switch did not fail"
  | exception Failure _ -> ());
  Alcotest.(check bool) "failed: reaped" false (exists !pid);
  Alcotest.(check int) "no descriptor left open" before (open_fds ())

let no_fd_leak () =
  run @@ fun () ->
  within "fds" @@ fun () ->
  let before = open_fds () in
  for round = 1 to 10 do
    Switch.run @@ fun sw ->
    let ps =
      List.init 10 (fun _ ->
          Process.spawn ~sw ~stdin:`Pipe ~stdout:`Pipe ~stderr:`Pipe "cat" [])
    in
    List.iteri
      (fun i p ->
        (* Half are awaited, the others left to the switch. *)
        if (i + round) mod 2 = 0 then (
          Fd.close (Process.stdin p);
          Alcotest.check status "cat" (WEXITED 0) (Process.await p)))
      ps
  done;
  Alcotest.(check int) "no descriptor left open" before (open_fds ());
  Alcotest.(check int) "none registered" 0 (Braid_io.stats ()).open_fds

(* Domain 1 runs processes while domain 0's loop keeps ticking. *)
let second_domain () =
  let results =
    run_domains ~domains:2 @@ fun ~domain ->
    within "domains" @@ fun () ->
    if domain = 0 then
      let (), longest = with_ticker (fun () -> Time.sleep 0.3) in
      Printf.sprintf "ticked, longest gap %.3f" longest
    else
      let outputs =
        Switch.run @@ fun sw ->
        List.init 10 (fun i ->
            Fiber.fork ~sw (fun () ->
                Process.output "echo" [ "domain"; string_of_int i ]))
        |> List.map Fiber.join
      in
      String.concat "" (List.map snd outputs)
  in
  match results with
  | [ ticks; outputs ] ->
      Alcotest.(check bool)
        ("domain 0 " ^ ticks) true
        (String.starts_with ~prefix:"ticked" ticks);
      Alcotest.(check string)
        "domain 1"
        (String.concat ""
           (List.init 10 (fun i -> Printf.sprintf "domain %d\n" i)))
        outputs
  | _ -> Alcotest.fail "two results expected"

let from_another_loop () =
  let spawned = Braid_sync.Promise.create () in
  let done_ = Braid_sync.Promise.create () in
  let results =
    run_domains ~domains:2 @@ fun ~domain ->
    within "other loop" @@ fun () ->
    if domain = 0 then (
      Switch.run @@ fun sw ->
      let p = Process.spawn ~sw "true" [] in
      Braid_sync.Promise.fill spawned p;
      Braid_sync.Promise.await done_;
      Process.await p = WEXITED 0)
    else
      let p = Braid_sync.Promise.await spawned in
      let refused =
        match Process.await p with
        | _ -> false
        | exception Invalid_argument _ -> true
      in
      Braid_sync.Promise.fill done_ ();
      refused
  in
  Alcotest.(check (list bool))
    "awaited by its own loop only" [ true; true ] results

let outside_a_loop () =
  match Switch.run (fun sw -> Process.spawn ~sw "true" []) with
  | _ -> Alcotest.fail "spawned outside a loop"
  | exception Invalid_argument _ -> ()

let () =
  let case name f = Alcotest.test_case name `Quick f in
  Alcotest.run "process"
    [
      ( "process",
        [
          case "echo through stdout" echo_through_stdout;
          case "cat round trip" cat_round_trip;
          case "stderr is separate" stderr_is_separate;
          case "exit codes" exit_codes;
          case "killed by a signal" killed_by_signal;
          case "working directory" working_directory;
          case "environment" environment;
          case "missing program" missing_program;
          case "only 0, 1 and 2 inherited" only_stdio_inherited;
          case "no pipe" no_pipe;
          case "detached, with descriptors by number" detached_descriptors;
          case "to a file" to_a_file;
          case "crossed descriptors" crossed_descriptors;
          case "input" input;
          case "50 at once while ticking" many_at_once;
          case "cancelled await" cancelled_await;
          case "switch end kills and reaps" switch_end_kills;
          case "no fd leak" no_fd_leak;
          case "second domain" second_domain;
          case "another loop's process" from_another_loop;
          case "outside a loop" outside_a_loop;
        ] );
    ]
