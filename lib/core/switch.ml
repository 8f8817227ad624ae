open Suspend

type failure = exn * Printexc.raw_backtrace

type t = {
  scope : Fiber.Scope.t;  (** The scope of [run]'s body. *)
  lock : Mutex.t;  (** Guards the fields below; never held while blocking. *)
  children : (int, unit -> unit) Hashtbl.t;  (** Fiber id -> cancel it. *)
  mutable live : int;
  mutable failures : failure list;  (** Most recent first. *)
  mutable releases : (unit -> unit) list;
  mutable finished : bool;
  mutable waiter : unit resumer option;
}

let with_lock sw f =
  Mutex.lock sw.lock;
  match f () with
  | v ->
      Mutex.unlock sw.lock;
      v
  | exception e ->
      Mutex.unlock sw.lock;
      raise e

let is_cancelled sw = Fiber.Scope.is_cancelled sw.scope

let cancel sw =
  Fiber.Scope.cancel sw.scope;
  let cancellers =
    with_lock sw (fun () ->
        Hashtbl.fold (fun _ c acc -> c :: acc) sw.children [])
  in
  List.iter (fun c -> c ()) cancellers

let record sw e bt =
  match e with
  | Cancelled when is_cancelled sw -> ()
  | _ -> with_lock sw (fun () -> sw.failures <- (e, bt) :: sw.failures)

let fail_bt sw e bt =
  record sw e bt;
  cancel sw

let fail sw e = fail_bt sw e (Printexc.get_callstack 0)

let child_done sw id =
  let waiter =
    with_lock sw (fun () ->
        Hashtbl.remove sw.children id;
        sw.live <- sw.live - 1;
        if sw.live = 0 then (
          let w = sw.waiter in
          sw.waiter <- None;
          w)
        else None)
  in
  Option.iter (fun wake -> ignore (wake (Ok ()))) waiter

let fork sw f =
  let fiber, handle, body = Fiber.Private.prepare ~on_failure:(fail_bt sw) f in
  let id = Fiber.Private.id fiber in
  with_lock sw (fun () ->
      if sw.finished then
        invalid_arg "Braid.Switch.fork: the switch has finished";
      sw.live <- sw.live + 1;
      Hashtbl.replace sw.children id (fun () -> Fiber.cancel handle));
  if is_cancelled sw then Fiber.cancel handle;
  Fiber.Private.start fiber (fun () ->
      body ();
      child_done sw id);
  handle

let on_release sw release =
  with_lock sw (fun () ->
      if sw.finished then
        invalid_arg "Braid.Switch.on_release: the switch has finished";
      sw.releases <- release :: sw.releases)

let await_children sw =
  suspend (fun wake ->
      with_lock sw (fun () ->
          if sw.live = 0 then Some ()
          else (
            sw.waiter <- Some wake;
            None)))

(* If the owner is cancelled while waiting, the children must still finish
   before [run] returns: cancel them and wait again, shielded. Returns why the
   wait was interrupted, if it was. *)
let wait_for_children sw =
  match await_children sw with
  | () -> None
  | exception e ->
      let bt = Printexc.get_raw_backtrace () in
      cancel sw;
      Fiber.protect (fun () -> await_children sw);
      Some (e, bt)

let release_resources sw =
  let releases =
    with_lock sw (fun () ->
        sw.finished <- true;
        let r = sw.releases in
        sw.releases <- [];
        r)
  in
  Fiber.protect (fun () ->
      List.iter
        (fun release ->
          try release ()
          with e ->
            with_lock sw (fun () ->
                sw.failures <- (e, Printexc.get_raw_backtrace ()) :: sw.failures))
        releases)

let run f =
  Fiber.Scope.run (fun scope ->
      let sw =
        {
          scope;
          lock = Mutex.create ();
          children = Hashtbl.create 8;
          live = 0;
          failures = [];
          releases = [];
          finished = false;
          waiter = None;
        }
      in
      let result =
        match f sw with
        | v -> Ok v
        | exception e ->
            let bt = Printexc.get_raw_backtrace () in
            fail_bt sw e bt;
            Error (e, bt)
      in
      let interrupted = wait_for_children sw in
      release_resources sw;
      match (List.rev sw.failures, result, interrupted) with
      | [], Ok v, None -> v
      | [], Error (e, bt), _ | [], Ok _, Some (e, bt) | [ (e, bt) ], _, _ ->
          Printexc.raise_with_backtrace e bt
      | many, _, _ -> raise (Fiber.Multiple many))
