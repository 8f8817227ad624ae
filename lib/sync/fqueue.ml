type 'a t = { front : 'a list; back : 'a list; length : int }

let empty = { front = []; back = []; length = 0 }
let is_empty q = q.length = 0
let length q = q.length

(* Into [front] when empty: single waiters, the usual case, never need a
   [List.rev] to be popped. *)
let push q x =
  if q.length = 0 then { front = [ x ]; back = []; length = 1 }
  else { q with back = x :: q.back; length = q.length + 1 }

let pop q =
  match q.front with
  | x :: front -> Some (x, { q with front; length = q.length - 1 })
  | [] -> (
      match List.rev q.back with
      | [] -> None
      | x :: front -> Some (x, { front; back = []; length = q.length - 1 }))

let rec remove_first p = function
  | [] -> None
  | x :: rest when p x -> Some rest
  | x :: rest -> Option.map (fun rest -> x :: rest) (remove_first p rest)

let remove p q =
  match remove_first p q.front with
  | Some front -> Some { q with front; length = q.length - 1 }
  | None -> (
      (* [back] is newest first: remove the oldest match, its last one. *)
      match remove_first p (List.rev q.back) with
      | Some back -> Some { q with back = List.rev back; length = q.length - 1 }
      | None -> None)

let to_list q = q.front @ List.rev q.back
