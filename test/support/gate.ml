type t = { lock : Mutex.t; opened : Condition.t; mutable is_open : bool }

let create () =
  { lock = Mutex.create (); opened = Condition.create (); is_open = false }

let wait t =
  Mutex.protect t.lock (fun () ->
      while not t.is_open do
        Condition.wait t.opened t.lock
      done)

let open_ t =
  Mutex.protect t.lock (fun () ->
      t.is_open <- true;
      Condition.broadcast t.opened)
