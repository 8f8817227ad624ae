open Suspend

type failure = exn * Printexc.raw_backtrace

type t = {
  id : int;  (** For traces only: [0] when events are off. *)
  scope : Fiber.Scope.t;  (** The scope of [run]'s body. *)
  lock : Mutex.t;  (** Guards the fields below; never held while blocking. *)
  children : (int, Fiber.t) Hashtbl.t;  (** By fiber id. *)
  mutable live : int;
  mutable failures : failure list;  (** Most recent first. *)
  releases : (int, unit -> unit) Hashtbl.t;
      (** By registration number: released newest first. *)
  mutable next_release : int;
  mutable stopped : bool;  (** {!stop} was called. *)
  mutable finished : bool;
  mutable waiter : unit resumer option;
  on_child_failure : (exn -> Printexc.raw_backtrace -> unit) option;
  on_child_exit : (Fiber.t -> unit) option;
      (** Made once per switch: a child's body keeps them as long as it runs,
          and closures made per child would cost it 13 words. *)
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
  List.iter Fiber.Private.cancel cancellers

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
  let fiber, handle, body =
    Fiber.Private.prepare ?on_failure:sw.on_child_failure
      ?on_exit:sw.on_child_exit f
  in
  with_lock sw (fun () ->
      if sw.finished then
        invalid_arg "Braid.Switch.fork: the switch has finished";
      sw.live <- sw.live + 1;
      Hashtbl.replace sw.children (Fiber.Private.id fiber) fiber);
  if is_cancelled sw then Fiber.cancel handle;
  Fiber.Private.start fiber body;
  handle

type hook = { switch : t; number : int }

let on_release_removable sw release =
  with_lock sw (fun () ->
      if sw.finished then
        invalid_arg "Braid.Switch.on_release: the switch has finished";
      let number = sw.next_release in
      sw.next_release <- number + 1;
      Hashtbl.replace sw.releases number release;
      { switch = sw; number })

let on_release sw release = ignore (on_release_removable sw release : hook)

let remove_release { switch; number } =
  with_lock switch (fun () -> Hashtbl.remove switch.releases number)

let stop sw =
  with_lock sw (fun () -> sw.stopped <- true);
  cancel sw

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
        let newest_first =
          Hashtbl.fold (fun number r acc -> (number, r) :: acc) sw.releases []
          |> List.sort (fun (a, _) (b, _) -> Int.compare b a)
          |> List.map snd
        in
        Hashtbl.reset sw.releases;
        newest_first)
  in
  Fiber.protect (fun () ->
      List.iter
        (fun release ->
          try release ()
          with e ->
            with_lock sw (fun () ->
                sw.failures <- (e, Printexc.get_raw_backtrace ()) :: sw.failures))
        releases)

(* [run] and [run_stoppable]: [Ok v] if the body returned [v], [Error ()] if
   the body was interrupted by {!stop} (nothing else failed). *)
let run_switch f =
  Fiber.Scope.run (fun scope ->
      let rec sw =
        {
          id = Braid_trace.Probe.switch_id ();
          scope;
          lock = Mutex.create ();
          children = Hashtbl.create 8;
          live = 0;
          failures = [];
          releases = Hashtbl.create 8;
          next_release = 0;
          stopped = false;
          finished = false;
          waiter = None;
          on_child_failure = Some (fun e bt -> fail_bt sw e bt);
          on_child_exit =
            Some (fun fiber -> child_done sw (Fiber.Private.id fiber));
        }
      in
      if sw.id <> 0 then
        Braid_trace.Probe.switch_opened ~switch:sw.id ~fiber:(Fiber.self_id ());
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
      if sw.id <> 0 then Braid_trace.Probe.switch_closed ~switch:sw.id;
      match (List.rev sw.failures, result, interrupted) with
      | [], Ok v, None -> Ok v
      (* A stop cancels the switch's own scope, so the body and the wait for
         the children may both see [Cancelled]: that is the stop. *)
      | [], Ok v, Some (Cancelled, _) when sw.stopped -> Ok v
      | [], Error (Cancelled, _), (None | Some (Cancelled, _)) when sw.stopped
        ->
          Error ()
      | [], Error (e, bt), _ | [], Ok _, Some (e, bt) | [ (e, bt) ], _, _ ->
          Printexc.raise_with_backtrace e bt
      | many, _, _ -> raise (Fiber.Multiple many))

(* Outside the switch's scope again: [Fiber.check] raises if the caller itself
   was cancelled, which a stop at the same moment must not hide. *)
let run f =
  match run_switch f with
  | Ok v -> v
  | Error () ->
      Fiber.check ();
      raise Cancelled

let run_stoppable f =
  match run_switch f with
  | Ok v -> Some v
  | Error () ->
      Fiber.check ();
      None
