(* The choice of backend: by argument, by BRAID_IO_BACKEND, and the fallback
   to epoll when the kernel refuses an io_uring ring (simulated with
   BRAID_IO_URING_SIMULATE, in a child process: the fallback's log line is
   printed once per process, and the environment is the child's). The rest of
   braid_io's behaviour on each backend is every other test of this folder,
   which dune runs once per backend. *)

open Braid_io
open Common

let backend_name = function Epoll -> "epoll" | Uring -> "uring"
let role_variable = "BRAID_IO_TEST_BACKEND_ROLE"

(* The child: two loops (two domains) that each move a byte through a pipe
   and sleep, then print which backend each ran on. *)
let child () =
  let names =
    run_domains ~domains:2 (fun ~domain:_ ->
        Switch.run @@ fun sw ->
        let r, w = Fd.pipe ~sw () in
        Fd.write_string w "x";
        let buf = Bytes.create 1 in
        assert (Fd.read_into r buf 0 1 = 1);
        Time.sleep 0.001;
        backend_name (backend ()))
  in
  print_string (String.concat " " names);
  exit 0

let read_file path = In_channel.with_open_bin path In_channel.input_all

(* Runs this program as the child with [env] added; its exit status, standard
   output and standard error. *)
let run_child env =
  let out = Filename.temp_file "backend" ".out"
  and err = Filename.temp_file "backend" ".err" in
  let environment =
    Array.append
      (Array.of_list ((role_variable ^ "=child") :: env))
      (Array.of_list
         (List.filter
            (fun v ->
              not
                (String.starts_with ~prefix:"BRAID_IO_BACKEND=" v
                || String.starts_with ~prefix:"BRAID_IO_URING_SIMULATE=" v))
            (Array.to_list (Unix.environment ()))))
  in
  let out_fd = Unix.openfile out [ O_WRONLY; O_TRUNC ] 0
  and err_fd = Unix.openfile err [ O_WRONLY; O_TRUNC ] 0 in
  let pid =
    Unix.create_process_env Sys.executable_name [| Sys.executable_name |]
      environment Unix.stdin out_fd err_fd
  in
  Unix.close out_fd;
  Unix.close err_fd;
  let status =
    match snd (Unix.waitpid [] pid) with
    | WEXITED n -> n
    | WSIGNALED _ | WSTOPPED _ -> -1
  in
  let result = (status, read_file out, read_file err) in
  Sys.remove out;
  Sys.remove err;
  result

let outcome = Alcotest.(triple int string string)

let by_argument () =
  List.iter
    (fun backend ->
      Alcotest.(check string)
        "the loop's backend" (backend_name backend)
        (backend_name (run ~backend (fun () -> Braid_io.backend ()))))
    [ Epoll; Uring ]

let by_environment () =
  Alcotest.check outcome "uring" (0, "uring uring", "")
    (run_child [ "BRAID_IO_BACKEND=uring" ]);
  Alcotest.check outcome "epoll" (0, "epoll epoll", "")
    (run_child [ "BRAID_IO_BACKEND=epoll" ]);
  Alcotest.check outcome "unset: epoll" (0, "epoll epoll", "") (run_child [])

(* Both loops fall back, and the process says so once. *)
let fallback () =
  let line reason =
    "braid_io: io_uring unavailable (io_uring_setup: " ^ reason
    ^ "); using epoll\n"
  in
  Alcotest.check outcome "ENOSYS"
    (0, "epoll epoll", line "Function not implemented")
    (run_child [ "BRAID_IO_BACKEND=uring"; "BRAID_IO_URING_SIMULATE=ENOSYS" ]);
  Alcotest.check outcome "EPERM"
    (0, "epoll epoll", line "Operation not permitted")
    (run_child [ "BRAID_IO_BACKEND=uring"; "BRAID_IO_URING_SIMULATE=EPERM" ]);
  Alcotest.check outcome "epoll asked for: nothing to say" (0, "epoll epoll", "")
    (run_child [ "BRAID_IO_BACKEND=epoll"; "BRAID_IO_URING_SIMULATE=ENOSYS" ])

let contains s part =
  let n = String.length part in
  let rec from i =
    i + n <= String.length s && (String.sub s i n = part || from (i + 1))
  in
  from 0

let unknown_name () =
  let status, out, err = run_child [ "BRAID_IO_BACKEND=kqueue" ] in
  Alcotest.(check bool) "fails" true (status <> 0);
  Alcotest.(check string) "prints nothing" "" out;
  Alcotest.(check bool)
    ("names the variable: " ^ err)
    true
    (contains err "BRAID_IO_BACKEND=kqueue")

(* More registrations in one turn than the ring's submission queue holds
   (1,024): the ones that do not fit are submitted early, and every
   descriptor still reports its readiness. *)
let many_registrations backend () =
  run ~backend @@ fun () ->
  within "many registrations" @@ fun () ->
  Switch.run @@ fun sw ->
  let pipes = List.init 700 (fun _ -> Fd.pipe ~sw ()) in
  let readers =
    List.map
      (fun (r, _) ->
        Fiber.fork ~sw (fun () ->
            let buf = Bytes.create 1 in
            Fd.read_into r buf 0 1))
      pipes
  in
  settle ();
  List.iter (fun (_, w) -> Fd.write_string w "x") pipes;
  let got = List.fold_left (fun n f -> n + Fiber.join f) 0 readers in
  Alcotest.(check int) "every reader got its byte" 700 got;
  check_no_waiters "after the reads"

(* A token is reused as soon as its descriptor is closed: events of the
   closed one's poll still in the ring (at least its end, -ECANCELED) must
   not reach the new one. Each round closes a connection with a reader
   waiting on it and opens another (same token) before the loop turns. An error event
   reaching the new one would mark it hung up, after which the loop never
   again believes a short read drained it: [Fd.may_have_input] stays true. *)
let reused_tokens backend () =
  run ~backend @@ fun () ->
  within "reused tokens" @@ fun () ->
  with_echo_server @@ fun addr ->
  Switch.run @@ fun sw ->
  for round = 1 to 200 do
    let old = Net.connect ~sw addr in
    let waiting =
      Fiber.fork ~sw (fun () ->
          match Net.read_into old (Bytes.create 1) 0 1 with
          | n -> n
          | exception Io_error { error = Unix.EBADF; _ } -> -1)
    in
    settle ();
    (* No turn of the loop between the close and the connect: the old poll's
       removal is submitted with the new one's registration. *)
    Net.close old;
    let fresh = Net.connect ~sw addr in
    Alcotest.(check int) "the closed one's reader" (-1) (Fiber.join waiting);
    let message = string_of_int round in
    Net.write_string fresh message;
    let buf = Bytes.create 64 in
    let n = Net.read_into fresh buf 0 64 in
    Alcotest.(check string) "echoed" message (Bytes.sub_string buf 0 n);
    Alcotest.(check bool)
      "a short read drained it" false (Fd.may_have_input fresh);
    Net.close fresh
  done;
  settle ();
  Alcotest.(check (pair int int))
    "after the rounds: only the echo server's acceptor waits" (1, 0)
    (waiters ())

let () =
  if Sys.getenv_opt role_variable = Some "child" then child ();
  let case name f = Alcotest.test_case name `Quick f in
  let on_both name f =
    List.map
      (fun b -> case (name ^ " (" ^ backend_name b ^ ")") (f b))
      [ Epoll; Uring ]
  in
  Alcotest.run "backend"
    [
      ( "choice",
        [
          case "by argument" by_argument;
          case "by BRAID_IO_BACKEND" by_environment;
          case "fallback to epoll, said once" fallback;
          case "an unknown name" unknown_name;
        ] );
      ( "ring",
        on_both "more registrations than the ring holds" many_registrations
        @ on_both "reused tokens" reused_tokens );
    ]
