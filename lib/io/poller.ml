type backend = Epoll | Uring

let backend_of_string = function
  | "epoll" -> Some Epoll
  | "uring" | "io_uring" -> Some Uring
  | _ -> None

let string_of_backend = function Epoll -> "epoll" | Uring -> "uring"

let default_backend () =
  match Sys.getenv_opt "BRAID_IO_BACKEND" with
  | None | Some "" -> Epoll
  | Some name -> (
      match backend_of_string name with
      | Some backend -> backend
      | None ->
          invalid_arg
            ("BRAID_IO_BACKEND=" ^ name ^ ": expected \"uring\" or \"epoll\""))

type t =
  | Epoll_poller of { epoll : Epoll.t; events : Epoll.events }
  | Uring_poller of Uring_poller.t

let simulated_refusal () =
  match Sys.getenv_opt "BRAID_IO_URING_SIMULATE" with
  | Some "ENOSYS" -> Some Unix.ENOSYS
  | Some "EPERM" -> Some Unix.EPERM
  | Some _ | None -> None

(* Whether io_uring works is the kernel's answer to the process, the same for
   every loop: said once, not once per domain. *)
let fallback_reported = Atomic.make false

let report_fallback error =
  if not (Atomic.exchange fallback_reported true) then
    prerr_endline
      ("braid_io: io_uring unavailable (io_uring_setup: "
     ^ Unix.error_message error ^ "); using epoll")

let create_epoll ~events =
  Epoll_poller { epoll = Epoll.create (); events = Epoll.events events }

let create backend ~events =
  match backend with
  | Epoll -> create_epoll ~events
  | Uring -> (
      match
        match simulated_refusal () with
        | Some error -> raise (Unix.Unix_error (error, "io_uring_setup", ""))
        | None -> Uring_poller.create ~events
      with
      | ring -> Uring_poller ring
      | exception Unix.Unix_error (error, _, _) ->
          report_fallback error;
          create_epoll ~events)

let backend = function Epoll_poller _ -> Epoll | Uring_poller _ -> Uring

let close = function
  | Epoll_poller { epoll; _ } -> Epoll.close epoll
  | Uring_poller ring -> Uring_poller.close ring

let add t fd flags ~token ~socket =
  match t with
  | Epoll_poller { epoll; _ } -> Epoll.add epoll fd flags ~token
  | Uring_poller ring -> Uring_poller.add ring fd flags ~token ~socket

let arm t token =
  match t with
  | Epoll_poller _ -> ()
  | Uring_poller ring -> Uring_poller.arm ring token

let completion_ops = function
  | Epoll_poller _ -> None
  | Uring_poller ring -> Uring_poller.ops ring

let op_waiters = function
  | Epoll_poller _ -> 0
  | Uring_poller ring -> Uring_poller.waiting ring

let remove t fd ~token =
  match t with
  | Epoll_poller { epoll; _ } -> Epoll.remove epoll fd
  | Uring_poller ring -> Uring_poller.remove ring fd ~token

let wait t ~timeout_ms =
  match t with
  | Epoll_poller { epoll; events } -> Epoll.wait epoll events ~timeout_ms
  | Uring_poller ring -> Uring_poller.wait ring ~timeout_ms

let token t i =
  match t with
  | Epoll_poller { events; _ } -> Epoll.token events i
  | Uring_poller ring -> Uring_poller.token ring i

let flags t i =
  match t with
  | Epoll_poller { events; _ } -> Epoll.flags events i
  | Uring_poller ring -> Uring_poller.flags ring i
