open Suspend

type failure = exn * Printexc.raw_backtrace

(* How to wake a suspended fiber that gets cancelled: the resumer of its
   current (or last) suspension itself. Unboxed, so registering it allocates
   nothing; a closure around it would cost five words per suspended fiber. *)
type waker = Waker : 'a resumer -> waker [@@unboxed]

type scope = {
  cancelled : bool Atomic.t;
  shield : bool;  (** Stops cancellation of enclosing scopes. *)
  mutable owner : t option;
      (** Set once, when the scope is made (for a fiber's root scope, just after
          the fiber: a [let rec] would cost a [caml_update_dummy] per fiber). *)
}

and t = {
  id : int;
  root : scope;
  mutable scopes : scope list;
      (** Innermost first. Only the fiber itself changes it; a canceller on
          another domain reads it after reading [waker], which the fiber sets
          after its last change before suspending. *)
  waker : waker Atomic.t;
      (** A resumer called with [Error Cancelled] if the fiber is cancelled
          (one-shot: stale ones return [false]). *)
  failure : failure option Atomic.t;
  mutable context : Context.t;
      (** Only the fiber itself changes it once started; before, whoever starts
          it (the scheduler's [Fork] handler: the parent's). *)
}

type 'a state =
  | Running of unit resumer list
  | Finished of ('a, failure) result

type 'a handle = { fiber : t; state : 'a state Atomic.t }

exception Multiple of (exn * Printexc.raw_backtrace) list

let () =
  Printexc.register_printer (function
    | Multiple failures ->
        Some
          ("Braid.Fiber.Multiple ["
          ^ String.concat "; "
              (List.map (fun (e, _) -> Printexc.to_string e) failures)
          ^ "]")
    | _ -> None)

type _ Effect.t +=
  | Fork : t * (unit -> unit) -> unit Effect.t
  | Current : t Effect.t

(* Fiber ids are positive, thread ids (see [self_id]) negative. *)
let next_id = Atomic.make 1
let no_waker = Waker (fun _ -> false)

let create ?(cancelled_with = []) () =
  let root = { cancelled = Atomic.make false; shield = false; owner = None } in
  let fiber =
    {
      id = Atomic.fetch_and_add next_id 1;
      root;
      scopes = root :: cancelled_with;
      waker = Atomic.make no_waker;
      failure = Atomic.make None;
      context = Context.empty;
    }
  in
  root.owner <- Some fiber;
  fiber

let id f = f.id
let set_waker f resume = Atomic.set f.waker (Waker resume)

let rec cancelled_in = function
  | [] -> false
  | s :: outer ->
      Atomic.get s.cancelled || ((not s.shield) && cancelled_in outer)

let is_cancelled_fiber f = cancelled_in f.scopes

(* The cancelled scope may be one a shield hides: only a fiber cancelled as a
   whole is woken. The waker is read first, the scopes after: the fiber
   pushes a shield before it publishes the resumer of a suspension inside
   it, so a canceller that finds that resumer also finds the shield. The
   other order could see the fiber cancelled, then call the resumer of a
   shielded suspension published meanwhile (dscheck's condition scenario
   finds it). *)
let wake_if_cancelled f =
  let (Waker resume) = Atomic.get f.waker in
  if is_cancelled_fiber f then ignore (resume (Error Cancelled))

let current () =
  try Some (Effect.perform Current) with Effect.Unhandled Current -> None

let is_cancelled () =
  match current () with Some f -> is_cancelled_fiber f | None -> false

let check () = if is_cancelled () then raise Cancelled

let self_id () =
  match current () with
  | Some f -> f.id
  | None -> -1 - Thread.id (Thread.self ())

(* {1 Context}

   A fiber keeps its context in its record. A systhread running no fiber
   keeps it in a table of its domain, by thread id: the runtime offers no
   thread-local storage, and a bare thread that binds a value or installs a
   handler must see it, as must the pool tasks it submits. The table is an
   immutable map in an [Atomic], as the systhreads of a domain share it. *)

module By_thread = Map.Make (Int)

let thread_contexts : Context.t By_thread.t Atomic.t Domain.DLS.key =
  Domain.DLS.new_key (fun () -> Atomic.make By_thread.empty)

let thread_context () =
  match
    By_thread.find_opt
      (Thread.id (Thread.self ()))
      (Atomic.get (Domain.DLS.get thread_contexts))
  with
  | Some c -> c
  | None -> Context.empty

let set_thread_context c =
  let table = Domain.DLS.get thread_contexts in
  let id = Thread.id (Thread.self ()) in
  let rec update () =
    let seen = Atomic.get table in
    let next =
      if c == Context.empty then By_thread.remove id seen
      else By_thread.add id c seen
    in
    if not (Atomic.compare_and_set table seen next) then update ()
  in
  update ()

let context () =
  match current () with Some f -> f.context | None -> thread_context ()

(* Runs [f] with [fiber]'s context replaced by [change] of it, restoring it
   after. [fiber] must be the calling fiber. *)
let with_fiber_context_changed fiber change f =
  let saved = fiber.context in
  fiber.context <- change saved;
  match f () with
  | v ->
      fiber.context <- saved;
      v
  | exception e ->
      let bt = Printexc.get_raw_backtrace () in
      fiber.context <- saved;
      Printexc.raise_with_backtrace e bt

(* Runs [f] with the caller's context replaced by [change] of it, restoring
   it after. One [current ()] (an effect) for both the read and the write. *)
let with_context_changed change f =
  match current () with
  | Some fiber -> with_fiber_context_changed fiber change f
  | None -> (
      let saved = thread_context () in
      set_thread_context (change saved);
      match f () with
      | v ->
          set_thread_context saved;
          v
      | exception e ->
          let bt = Printexc.get_raw_backtrace () in
          set_thread_context saved;
          Printexc.raise_with_backtrace e bt)

let with_context_set c f = with_context_changed (fun _ -> c) f

type 'a key = 'a Context.key

let create_key = Context.create_key
let get key = Context.find key (context ())
let with_binding key v f = with_context_changed (Context.add key v) f

(* Not [with_fiber_context_changed fiber (Context.add key v) f]: that
   partial application is a closure per call, and the server binds a request
   id with this once per request. *)
let with_binding_in fiber key v f =
  let saved = fiber.context in
  fiber.context <- Context.add key v saved;
  match f () with
  | v ->
      fiber.context <- saved;
      v
  | exception e ->
      let bt = Printexc.get_raw_backtrace () in
      fiber.context <- saved;
      Printexc.raise_with_backtrace e bt

let without_binding key f = with_context_changed (Context.remove key) f

type handler = Context.handler = { run : 'a. (unit -> 'a) -> 'a }
type context = Context.t

let with_handler h f =
  with_context_changed (Context.add_handler h) (fun () -> h.run f)

let with_context c f = with_context_set c (fun () -> Context.run_handlers c f)
let set_context fiber c = fiber.context <- c
let inherit_context ~parent child = child.context <- parent.context

(* Runs [f] with [scope] pushed on [fiber]'s scopes, restoring them after. *)
let with_scope fiber scope f =
  let saved = fiber.scopes in
  fiber.scopes <- scope :: saved;
  match f () with
  | v ->
      fiber.scopes <- saved;
      v
  | exception e ->
      let bt = Printexc.get_raw_backtrace () in
      fiber.scopes <- saved;
      Printexc.raise_with_backtrace e bt

let protect f =
  match current () with
  | None -> f ()
  | Some fiber ->
      with_scope fiber
        { cancelled = Atomic.make false; shield = true; owner = Some fiber }
        f

let run_scope_in fiber f =
  let scope =
    { cancelled = Atomic.make false; shield = false; owner = Some fiber }
  in
  with_scope fiber scope (fun () -> f scope)

module Scope = struct
  type nonrec t = scope

  let run f =
    match current () with
    | None -> f { cancelled = Atomic.make false; shield = false; owner = None }
    | Some fiber -> run_scope_in fiber f

  let cancel s =
    if not (Atomic.exchange s.cancelled true) then
      match s.owner with
      | Some fiber ->
          Braid_trace.Probe.fiber_cancelled fiber.id;
          wake_if_cancelled fiber
      | None -> ()

  let is_cancelled s = Atomic.get s.cancelled
  let owner s = s.owner
end

let finish h result =
  Braid_trace.Probe.fiber_finished h.fiber.id;
  match Atomic.exchange h.state (Finished result) with
  | Running joiners -> List.iter (fun wake -> ignore (wake (Ok ()))) joiners
  | Finished _ -> assert false

(* Whatever [body] holds stays alive as long as the fiber runs, so it holds
   few things: the hooks are the owner's (a switch makes its two once, not
   per child), not closures made for this fiber. *)
let prepare ?on_failure ?on_exit f =
  let fiber = create () in
  let h = { fiber; state = Atomic.make (Running []) } in
  let body () =
    let result =
      match Context.run_handlers fiber.context f with
      | v -> Ok v
      | exception e ->
          let bt = Printexc.get_raw_backtrace () in
          (match e with
          | Cancelled when is_cancelled_fiber fiber -> ()
          | _ -> (
              match on_failure with
              | None -> Atomic.set fiber.failure (Some (e, bt))
              | Some report -> report e bt));
          Error (e, bt)
    in
    finish h result;
    match on_exit with None -> () | Some exit -> exit fiber
  in
  (fiber, h, body)

let start fiber body =
  try Effect.perform (Fork (fiber, body))
  with Effect.Unhandled (Fork _) ->
    invalid_arg "Braid.Fiber.fork: not inside a Braid scheduler"

let fork f =
  let fiber, h, body = prepare f in
  start fiber body;
  h

let yield () =
  suspend (fun resume ->
      ignore (resume (Ok ()));
      None)

let outcome h =
  match Atomic.get h.state with Finished r -> Some r | Running _ -> None

let is_done h = Option.is_some (outcome h)
let unobserved_failure f = Atomic.get f.failure

let rec add_joiner h wake =
  match Atomic.get h.state with
  | Finished _ -> Some ()
  | Running joiners as seen ->
      if Atomic.compare_and_set h.state seen (Running (wake :: joiners)) then
        None
      else add_joiner h wake

let rec remove_joiner h wake =
  match Atomic.get h.state with
  | Finished _ -> ()
  | Running joiners as seen ->
      if List.memq wake joiners then
        let rest = List.filter (fun w -> w != wake) joiners in
        if not (Atomic.compare_and_set h.state seen (Running rest)) then
          remove_joiner h wake

let rec join h =
  match Atomic.get h.state with
  | Finished (Ok v) -> v
  | Finished (Error (e, bt)) ->
      Atomic.set h.fiber.failure None;
      Printexc.raise_with_backtrace e bt
  | Running _ ->
      let mine = ref (fun _ -> false) in
      Braid_trace.Probe.waiting_on_join h.fiber.id;
      (match
         suspend (fun wake ->
             mine := wake;
             add_joiner h wake)
       with
      | () -> ()
      | exception e ->
          remove_joiner h !mine;
          raise e);
      join h

let cancel h = Scope.cancel h.fiber.root
let cancel_fiber f = Scope.cancel f.root

let result_of_run ~main handle ~failed =
  let others =
    List.rev failed
    |> List.filter (fun f -> f != main)
    |> List.filter_map unobserved_failure
  in
  match (outcome handle, others) with
  | Some (Ok v), [] -> v
  | Some (Error (e, bt)), [] | Some (Ok _), [ (e, bt) ] ->
      Printexc.raise_with_backtrace e bt
  | Some (Error failure), others -> raise (Multiple (failure :: others))
  | Some (Ok _), others -> raise (Multiple others)
  | None, _ -> invalid_arg "Fiber.result_of_run: the main fiber is not finished"

(* What a fiber started on behalf of another inherits of its cancellation:
   that fiber's scopes as they are now (shared: cancelling one later is
   seen), up to its innermost shield. *)
type cancellation = scope list

let cancellation_of = function Some f -> f.scopes | None -> []

let submitter () =
  match current () with
  | Some f -> (Some f, f.context)
  | None -> (None, thread_context ())

module Private = struct
  type nonrec cancellation = cancellation

  let create = create
  let current = current
  let run_scope_in = run_scope_in
  let with_binding_in = with_binding_in
  let submitter = submitter
  let thread_context = thread_context
  let cancellation_of = cancellation_of
  let prepare = prepare
  let start = start
  let outcome = outcome
  let unobserved_failure = unobserved_failure
  let result_of_run = result_of_run
  let is_cancelled_fiber = is_cancelled_fiber
  let run_in_context = Context.run_handlers
  let set_context = set_context
  let inherit_context = inherit_context
  let set_waker = set_waker
  let cancel = cancel_fiber
  let wake_if_cancelled = wake_if_cancelled
  let id = id

  type _ Effect.t += Fork = Fork | Current = Current
end
