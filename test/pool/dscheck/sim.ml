(* Blocking threads for model checking: a dscheck thread that blocks is
   captured as a continuation; whoever wakes it puts it in [ready], which the
   dscheck threads drain once their own work is done. A wake-up that never
   comes leaves the thread's outcome unset, which the final checks see. *)

type _ Effect.t += Block : ((unit -> unit) -> bool) -> bool Effect.t

(* The model runs on one real thread: plain state is safe here. *)
let ready : (unit -> unit) Queue.t = Queue.create ()
let reset () = Queue.clear ready

(* [block register] gives [register] the function that will wake the
   caller; [register] returns whether it registered it. [true] once woken,
   [false] at once if [register] did not register. *)
let block register = Effect.perform (Block register)

let handle f =
  Effect.Deep.try_with f ()
    {
      effc =
        (fun (type a) (e : a Effect.t) ->
          match e with
          | Block register ->
              Some
                (fun (k : (a, unit) Effect.Deep.continuation) ->
                  let wake () =
                    Queue.push (fun () -> Effect.Deep.continue k true) ready
                  in
                  if not (register wake) then Effect.Deep.continue k false)
          | _ -> None);
    }

let drain () =
  while not (Queue.is_empty ready) do
    (Queue.pop ready) ()
  done

(* A thread running [f]; [!result] is set once [f] returned. *)
let spawn f =
  let result = ref None in
  Atomic.spawn (fun () ->
      handle (fun () -> result := Some (f ()));
      drain ());
  result
