(* How the C stub is told what to make of each of the child's descriptors
   0, 1 and 2 (process_stubs.c reads the constructors by position). *)
type child_fd = Inherit | Null | Dup of Unix.file_descr

external spawn_stub :
  string ->
  string array ->
  string array option ->
  string option ->
  child_fd array ->
  int = "braid_io_process_spawn"

external pidfd_open : int -> Unix.file_descr = "braid_io_pidfd_open"

type stdio = [ `Inherit | `Null | `Pipe | `Fd of Unix.file_descr ]

(* How [await] learns that the child exited. *)
type exit_watch =
  | Pidfd of Loop.fd  (** Readable once the child has exited. *)
  | Polling  (** No pidfd: [waitpid] on a timer. *)

type state =
  | Running  (** Not reaped: the pid is ours, [kill] is safe. *)
  | Exited of Unix.process_status
  | Reaped_elsewhere
      (** Someone else's [waitpid] took it (ECHILD): its pid may already name
          another process, so it is never signalled again. *)

type t = {
  loop : Loop.t;
  pid : int;
  watch : exit_watch;
  mutable state : state;
  stdin : Fd.t option;
  stdout : Fd.t option;
  stderr : Fd.t option;
  forget : unit -> unit;
      (** Takes the switch's release back once the child is reaped: a long-lived
          switch spawning many processes keeps none of them. *)
}

let pid t = t.pid

let check_c_string ~op what s =
  if String.contains s '\000' then
    invalid_arg (Printf.sprintf "%s: %s contains a NUL byte" op what)

(* What the stub copies to C strings. *)
let check_c_strings ~op prog args env cwd =
  check_c_string ~op "the program" prog;
  List.iter (check_c_string ~op "an argument") args;
  Option.iter (Array.iter (check_c_string ~op "the environment")) env;
  Option.iter (check_c_string ~op "the working directory") cwd

let close_watch t =
  match t.watch with
  | Pidfd fd -> (
      (* A pidfd holds no data: closing it cannot lose anything, and the
         only error close(2) could report here is not actionable. *)
      try Loop.close fd with Unix.Unix_error _ -> ())
  | Polling -> ()

(* [Some status] once the child is reaped, [None] while it runs. Only on
   [t.loop]'s thread, so that nothing signals the pid after it was
   reaped. *)
let rec reap t =
  match t.state with
  | Exited status -> Some status
  | Reaped_elsewhere -> Io_error.fail "waitpid" Unix.ECHILD
  | Running -> (
      match Unix.waitpid [ Unix.WNOHANG ] t.pid with
      | 0, _ -> None
      | _, status ->
          t.state <- Exited status;
          close_watch t;
          t.forget ();
          Some status
      | exception Unix.Unix_error (Unix.EINTR, _, _) -> reap t
      | exception Unix.Unix_error (Unix.ECHILD, _, _) ->
          t.state <- Reaped_elsewhere;
          close_watch t;
          t.forget ();
          Io_error.fail "waitpid" Unix.ECHILD
      | exception Unix.Unix_error (error, _, _) -> Io_error.fail "waitpid" error
      )

let first_poll_ns = 1_000_000
let max_poll_ns = 50_000_000

let check_loop t ~op =
  if Loop.current ~op != t.loop then
    invalid_arg (op ^ ": the process was spawned by another loop")

let await t =
  let op = "Braid_io.Process.await" in
  check_loop t ~op;
  let rec go poll_ns =
    match reap t with
    | Some status -> status
    | None -> (
        match t.watch with
        | Pidfd fd ->
            (* No fiber runs between [waitpid] and the registration, and
               the exit makes an edge the loop reports at its next poll. *)
            (try Loop.await fd ~write:false ~op
             with Loop.Closed ->
               (* Another fiber reaped the child and closed the pidfd:
                  [reap] returns its status. *)
               ());
            go poll_ns
        | Polling ->
            Loop.sleep_until t.loop ~deadline:(Loop.now_ns () + poll_ns);
            go (min max_poll_ns (2 * poll_ns)))
  in
  go first_poll_ns

let status t =
  check_loop t ~op:"Braid_io.Process.status";
  reap t

let kill_now t signal =
  try Unix.kill t.pid signal
  with Unix.Unix_error (error, _, _) -> Io_error.fail "kill" error

let signal t signal =
  check_loop t ~op:"Braid_io.Process.signal";
  match t.state with
  | Running -> kill_now t signal
  | Exited _ | Reaped_elsewhere -> ()

let kill t = signal t Sys.sigkill

(* At switch end: a child still running is killed and reaped, so that no
   zombie is left behind. Runs shielded from cancellation. *)
let release t =
  match reap t with
  | Some _ -> ()
  | None ->
      kill_now t Sys.sigkill;
      ignore (await t : Unix.process_status)
  | exception Io_error.Io_error { error = Unix.ECHILD; _ } ->
      (* Something else reaped the child (a waitpid on -1, or SIGCHLD
         ignored): there is nothing left to kill or reap, and an [await]
         reports it. *)
      ()

let pipe_end name = function
  | Some fd -> fd
  | None ->
      invalid_arg
        (Printf.sprintf "Braid_io.Process.%s: not spawned with `Pipe" name)

let stdin t = pipe_end "stdin" t.stdin
let stdout t = pipe_end "stdout" t.stdout
let stderr t = pipe_end "stderr" t.stderr

let close_quietly unix =
  (* A descriptor we created and never handed out: nothing to report. *)
  try Unix.close unix with Unix.Unix_error _ -> ()

(* The descriptors made for one spawn, so that every path can close them:
   the child's ends always once it started (or failed to), ours on
   failure. *)
type ends = { mutable child : Unix.file_descr list; mutable ours : Fd.t list }

(* A "pipe" is a Unix-domain socket pair: our end is then written with
   [send] and MSG_NOSIGNAL, so writing to a child that exited fails with
   EPIPE instead of killing this whole program with SIGPIPE. *)
let connect ~sw loop ends ~op = function
  | `Inherit -> (Inherit, None)
  | `Null -> (Null, None)
  | `Fd unix -> (Dup unix, None)
  | `Pipe ->
      let ours, theirs =
        Unix.socketpair ~cloexec:true Unix.PF_UNIX Unix.SOCK_STREAM 0
      in
      ends.child <- theirs :: ends.child;
      (match Unix.set_nonblock ours with
      | () -> ()
      | exception e ->
          close_quietly ours;
          raise e);
      let fd = Handle.register ~sw loop ours ~socket:true ~stream:true ~op in
      ends.ours <- fd :: ends.ours;
      (Dup theirs, Some fd)

let watch_exit loop pid ~op =
  match pidfd_open pid with
  | exception Unix.Unix_error _ ->
      (* ENOSYS before Linux 5.3, or no descriptor left (EMFILE): waiting
         by polling still works. *)
      Polling
  | unix -> (
      match Loop.register loop unix ~socket:false ~stream:false ~op with
      | fd -> Pidfd fd
      | exception Unix.Unix_error _ ->
          (* epoll refused it (out of memory, say): poll instead. *)
          close_quietly unix;
          Polling)

(* [posix_spawn] returns once the child has exec'd the program: a
   millisecond or so, but tens of them on a loaded machine, and a loop that
   starts fifty children in one turn would stall for the sum. So it runs on
   the Blocking pool (the stub releases the runtime lock), and only the
   calling fiber waits, shielded from cancellation: the wait is short, and a
   child started meanwhile must still be handed to the switch. *)
let off_the_loop f = Braid.Fiber.protect (fun () -> Blocking.run f)

(* What the switch's release action knows: the process once started, and
   whether the switch has finished. *)
type slot = { mutable process : t option; mutable released : bool }

let spawn ~sw ?env ?cwd ?(stdin = `Inherit) ?(stdout = `Inherit)
    ?(stderr = `Inherit) prog args =
  let op = "Braid_io.Process.spawn" in
  let loop = Loop.current ~op in
  check_c_strings ~op prog args env cwd;
  (* Registered before anything exists, so that a finished switch fails
     here, with nothing to undo. *)
  let slot = { process = None; released = false } in
  let hook =
    Braid.Switch.on_release_removable sw (fun () ->
        slot.released <- true;
        Option.iter release slot.process)
  in
  let ends = { child = []; ours = [] } in
  let argv = Array.of_list (prog :: args) in
  match
    Io_error.of_unix @@ fun () ->
    let stdin, stdin_pipe = connect ~sw loop ends ~op stdin in
    let stdout, stdout_pipe = connect ~sw loop ends ~op stdout in
    let stderr, stderr_pipe = connect ~sw loop ends ~op stderr in
    let stdio = [| stdin; stdout; stderr |] in
    let pid = off_the_loop (fun () -> spawn_stub prog argv env cwd stdio) in
    (pid, stdin_pipe, stdout_pipe, stderr_pipe)
  with
  | pid, stdin, stdout, stderr ->
      List.iter close_quietly ends.child;
      let t =
        {
          loop;
          pid;
          watch = watch_exit loop pid ~op;
          state = Running;
          stdin;
          stdout;
          stderr;
          forget = (fun () -> Braid.Switch.remove_release hook);
        }
      in
      if slot.released then (
        (* The switch belongs to another fiber and finished while the
           program started. *)
        Braid.Fiber.protect (fun () -> release t);
        invalid_arg (op ^ ": the switch finished while the program started"));
      slot.process <- Some t;
      t
  | exception e ->
      let bt = Printexc.get_raw_backtrace () in
      List.iter close_quietly ends.child;
      List.iter (fun fd -> try Fd.close fd with Fd.Error _ -> ()) ends.ours;
      Printexc.raise_with_backtrace e bt

let read_all fd =
  let out = Buffer.create 4096 in
  let chunk = Bytes.create 4096 in
  let rec go () =
    match Fd.read_into fd chunk 0 (Bytes.length chunk) with
    | 0 -> Buffer.contents out
    | n ->
        Buffer.add_subbytes out chunk 0 n;
        go ()
  in
  go ()

let output ?env ?cwd ?input prog args =
  Braid.Switch.run @@ fun sw ->
  let stdin = if Option.is_some input then `Pipe else `Null in
  let p = spawn ~sw ?env ?cwd ~stdin ~stdout:`Pipe prog args in
  Option.iter
    (fun input ->
      let to_child = pipe_end "output" p.stdin in
      ignore
        (Braid.Switch.fork sw (fun () ->
             (match Fd.write_string to_child input with
             | () -> ()
             | exception Fd.Error { error = Unix.EPIPE | Unix.ECONNRESET; _ } ->
                 (* The child exited without reading all of its input: its
                    status says how it went. *)
                 ());
             Fd.close to_child)
          : unit Braid.Fiber.handle))
    input;
  let out = read_all (pipe_end "output" p.stdout) in
  (await p, out)

let spawn_detached ?env ?cwd ~fds prog args =
  let op = "Braid_io.Process.spawn_detached" in
  check_c_strings ~op prog args env cwd;
  let count = List.length fds in
  if count < 3 || count > 16 then invalid_arg (op ^ ": from 3 to 16 descriptors");
  let child_fds = Array.of_list (List.map (fun fd -> Dup fd) fds) in
  let argv = Array.of_list (prog :: args) in
  Io_error.of_unix (fun () ->
      off_the_loop (fun () -> spawn_stub prog argv env cwd child_fds))
