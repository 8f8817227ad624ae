type t = Bridge.t

module Owner = Bridge.Owner

let create = Bridge.create
let run = Bridge.run
let await_lwt = Bridge.await_lwt

module Promise = struct
  let await t p = run t (fun () -> Braid_sync.Promise.await p)
end

module Mvar = struct
  let take t m = run t (fun () -> Braid_sync.Mvar.take m)
  let put t m v = run t (fun () -> Braid_sync.Mvar.put m v)
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
  let acquire t s = run t (fun () -> Braid_sync.Semaphore.acquire s)
end

module Channel = struct
  let send t c v = run t (fun () -> Braid_sync.Channel.send c v)
  let recv t c = run t (fun () -> Braid_sync.Channel.recv c)
end

module Lazy = struct
  let force t l = run t (fun () -> Braid_sync.Lazy.force l)
end
