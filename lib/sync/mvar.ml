type 'a putter = { value : 'a; resume : unit Blocking.resumer }

(* Invariant: takers wait only while empty, putters only while full. *)
type 'a state =
  | Empty of 'a Blocking.resumer Fqueue.t
  | Full of 'a * 'a putter Fqueue.t

type 'a t = 'a state Atomic.t

let empty = Empty Fqueue.empty
let create v = Atomic.make (Full (v, Fqueue.empty))
let create_empty () = Atomic.make empty
let is_empty t = match Atomic.get t with Empty _ -> true | Full _ -> false

(* The first blocked putter's value replaces the one taken: it is committed
   before the putter is resumed, so a putter whose resumer says "cancelled"
   still put its value (see [withdraw_putter]). *)
let rec try_take t =
  match Atomic.get t with
  | Empty _ -> None
  | Full (v, putters) as seen -> (
      match Fqueue.pop putters with
      | None ->
          if Atomic.compare_and_set t seen empty then Some v else try_take t
      | Some (p, rest) ->
          if Atomic.compare_and_set t seen (Full (p.value, rest)) then (
            ignore (p.resume (Ok ()));
            Some v)
          else try_take t)

(* A taker whose resumer says "cancelled" did not get [v]: offer it again. *)
let rec try_put t v =
  match Atomic.get t with
  | Full _ -> false
  | Empty takers as seen -> (
      match Fqueue.pop takers with
      | None ->
          Atomic.compare_and_set t seen (Full (v, Fqueue.empty)) || try_put t v
      | Some (resume, rest) ->
          if Atomic.compare_and_set t seen (Empty rest) then
            resume (Ok v) || try_put t v
          else try_put t v)

let rec register_taker t resume =
  match Atomic.get t with
  | Full _ -> (
      match try_take t with Some _ as v -> v | None -> register_taker t resume)
  | Empty takers as seen ->
      if Atomic.compare_and_set t seen (Empty (Fqueue.push takers resume)) then
        None
      else register_taker t resume

let rec withdraw_taker t resume e =
  match Atomic.get t with
  | Full _ -> raise e
  | Empty takers as seen -> (
      match Fqueue.remove (fun r -> r == resume) takers with
      | None -> raise e
      | Some rest ->
          if Atomic.compare_and_set t seen (Empty rest) then raise e
          else withdraw_taker t resume e)

let take t =
  match try_take t with
  | Some v -> v
  | None ->
      Blocking.suspend_withdrawing ~register:(register_taker t)
        ~withdraw:(withdraw_taker t)

let rec register_putter t v resume =
  match Atomic.get t with
  | Empty _ -> if try_put t v then Some () else register_putter t v resume
  | Full (x, putters) as seen ->
      if
        Atomic.compare_and_set t seen
          (Full (x, Fqueue.push putters { value = v; resume }))
      then None
      else register_putter t v resume

(* Still queued: the put did not happen, raise. Gone: a taker committed the
   value before the cancellation was seen, so the put happened. *)
let rec withdraw_putter t resume e =
  match Atomic.get t with
  | Empty _ -> ()
  | Full (x, putters) as seen -> (
      match Fqueue.remove (fun p -> p.resume == resume) putters with
      | None -> ()
      | Some rest ->
          if Atomic.compare_and_set t seen (Full (x, rest)) then raise e
          else withdraw_putter t resume e)

let put t v =
  if not (try_put t v) then
    Blocking.suspend_withdrawing ~register:(register_putter t v)
      ~withdraw:(withdraw_putter t)
