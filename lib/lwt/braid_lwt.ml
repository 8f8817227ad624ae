type t = Bridge.t

module Owner = Bridge.Owner

let create = Bridge.create
let run = Bridge.run
let await_lwt = Bridge.await_lwt

(* Each blocking operation of a structure first tries its non-blocking
   twin, and waits only if that fails. Trying it here, before starting a
   fiber, is what the fiber would do first, so the outcome is the same; an
   operation that need not wait then costs no fiber, no effect and no
   pending promise, only an already resolved one. *)

let ready t what = Bridge.check_thread t what

module Promise = struct
  let await t p =
    ready t "Braid_lwt.Promise.await";
    match Braid_sync.Promise.peek p with
    | Some (Ok v) -> Lwt.return v
    | Some (Error e) -> Lwt.fail e
    | None -> run t (fun () -> Braid_sync.Promise.await p)
end

module Mvar = struct
  let take t m =
    ready t "Braid_lwt.Mvar.take";
    match Braid_sync.Mvar.try_take m with
    | Some v -> Lwt.return v
    | None -> run t (fun () -> Braid_sync.Mvar.take m)

  let put t m v =
    ready t "Braid_lwt.Mvar.put";
    if Braid_sync.Mvar.try_put m v then Lwt.return_unit
    else run t (fun () -> Braid_sync.Mvar.put m v)
end

module Mutex = struct
  let lock t ~owner m = run ~owner t (fun () -> Braid_sync.Mutex.lock m)

  let unlock t ~owner m =
    Bridge.run_now ~owner t (fun () -> Braid_sync.Mutex.unlock m)

  let with_lock t m f =
    let owner = Owner.create () in
    Lwt.bind (lock t ~owner m) (fun () ->
        Lwt.finalize
          (fun () -> f owner)
          (fun () ->
            unlock t ~owner m;
            Lwt.return_unit))
end

module Condition = struct
  let wait t ~owner c m = run ~owner t (fun () -> Braid_sync.Condition.wait c m)
end

module Semaphore = struct
  let acquire t s =
    ready t "Braid_lwt.Semaphore.acquire";
    if Braid_sync.Semaphore.try_acquire s then Lwt.return_unit
    else run t (fun () -> Braid_sync.Semaphore.acquire s)
end

module Channel = struct
  let send t c v =
    ready t "Braid_lwt.Channel.send";
    match Braid_sync.Channel.try_send c v with
    | true -> Lwt.return_unit
    | false -> run t (fun () -> Braid_sync.Channel.send c v)
    | exception (Braid_sync.Channel.Closed as e) -> Lwt.fail e

  let recv t c =
    ready t "Braid_lwt.Channel.recv";
    match Braid_sync.Channel.try_recv c with
    | Some v -> Lwt.return v
    | None -> run t (fun () -> Braid_sync.Channel.recv c)
    | exception (Braid_sync.Channel.Closed as e) -> Lwt.fail e
end

module Lazy = struct
  let force t l = run t (fun () -> Braid_sync.Lazy.force l)
end
