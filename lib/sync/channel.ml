type 'a sender = { value : 'a; resume : unit Blocking.resumer }

(* Invariants: receivers wait only while [items] and [senders] are empty and
   the channel is open; senders wait only while [items] is full. *)
type 'a state = {
  items : 'a Fqueue.t;
  receivers : 'a Blocking.resumer Fqueue.t;
  senders : 'a sender Fqueue.t;
  closed : bool;
}

type 'a t = { capacity : int; state : 'a state Atomic.t }

exception Closed

let create capacity =
  if capacity < 0 then
    invalid_arg "Braid_sync.Channel.create: negative capacity";
  let state =
    {
      items = Fqueue.empty;
      receivers = Fqueue.empty;
      senders = Fqueue.empty;
      closed = false;
    }
  in
  { capacity; state = Atomic.make state }

let capacity t = t.capacity
let length t = Fqueue.length (Atomic.get t.state).items
let is_closed t = (Atomic.get t.state).closed

(* A receiver whose resumer says "cancelled" did not get [v]: try again. *)
let rec try_send t v =
  let s = Atomic.get t.state in
  if s.closed then raise Closed
  else
    match Fqueue.pop s.receivers with
    | Some (resume, receivers) ->
        if Atomic.compare_and_set t.state s { s with receivers } then
          resume (Ok v) || try_send t v
        else try_send t v
    | None ->
        Fqueue.length s.items < t.capacity
        && (Atomic.compare_and_set t.state s
              { s with items = Fqueue.push s.items v }
           || try_send t v)

(* A blocked sender's value is committed (moved to the buffer, or handed over)
   before the sender is resumed; see [withdraw_sender]. *)
let rec try_recv t =
  let s = Atomic.get t.state in
  match Fqueue.pop s.items with
  | Some (v, items) -> (
      match Fqueue.pop s.senders with
      | None ->
          if Atomic.compare_and_set t.state s { s with items } then Some v
          else try_recv t
      | Some (p, senders) ->
          if
            Atomic.compare_and_set t.state s
              { s with items = Fqueue.push items p.value; senders }
          then (
            ignore (p.resume (Ok ()));
            Some v)
          else try_recv t)
  | None -> (
      match Fqueue.pop s.senders with
      | Some (p, senders) ->
          if Atomic.compare_and_set t.state s { s with senders } then (
            ignore (p.resume (Ok ()));
            Some p.value)
          else try_recv t
      | None -> if s.closed then raise Closed else None)

let rec register_receiver t resume =
  match try_recv t with
  | Some _ as v -> v
  | None ->
      let s = Atomic.get t.state in
      if Fqueue.is_empty s.items && Fqueue.is_empty s.senders && not s.closed
      then
        if
          Atomic.compare_and_set t.state s
            { s with receivers = Fqueue.push s.receivers resume }
        then None
        else register_receiver t resume
      else register_receiver t resume

let rec withdraw_receiver t resume e =
  let s = Atomic.get t.state in
  match Fqueue.remove (fun r -> r == resume) s.receivers with
  | None -> raise e
  | Some receivers ->
      if Atomic.compare_and_set t.state s { s with receivers } then raise e
      else withdraw_receiver t resume e

let recv t =
  match try_recv t with
  | Some v -> v
  | None ->
      Blocking.suspend_withdrawing ~register:(register_receiver t)
        ~withdraw:(withdraw_receiver t)

let rec register_sender t v resume =
  if try_send t v then Some ()
  else
    let s = Atomic.get t.state in
    if s.closed then raise Closed
    else if Fqueue.length s.items >= t.capacity && Fqueue.is_empty s.receivers
    then
      let senders = Fqueue.push s.senders { value = v; resume } in
      if Atomic.compare_and_set t.state s { s with senders } then None
      else register_sender t v resume
    else register_sender t v resume

(* Still queued: not sent, raise. Gone: a receiver committed the value before
   the cancellation was seen, so the send happened. *)
let rec withdraw_sender t resume e =
  let s = Atomic.get t.state in
  match Fqueue.remove (fun p -> p.resume == resume) s.senders with
  | None -> ()
  | Some senders ->
      if Atomic.compare_and_set t.state s { s with senders } then raise e
      else withdraw_sender t resume e

let send t v =
  if not (try_send t v) then
    Blocking.suspend_withdrawing ~register:(register_sender t v)
      ~withdraw:(withdraw_sender t)

let rec close t =
  let s = Atomic.get t.state in
  if not s.closed then
    if
      Atomic.compare_and_set t.state s
        { s with closed = true; receivers = Fqueue.empty }
    then
      List.iter
        (fun resume -> ignore (resume (Error Closed)))
        (Fqueue.to_list s.receivers)
    else close t
