(* [name] is for a debugger's eyes: no code reads it. *)
type 'a key = { id : int; name : string; witness : 'a Type.Id.t }
[@@warning "-69"]

type binding = Binding : 'a key * 'a -> binding
type handler = { run : 'a. (unit -> 'a) -> 'a }

type t = {
  bindings : binding list;
      (** Few keys are ever bound at once: a list beats a map. *)
  handlers : handler list;  (** Innermost first. *)
}

let empty = { bindings = []; handlers = [] }
let next_id = Atomic.make 0

let create_key ?(name = "anonymous") () =
  { id = Atomic.fetch_and_add next_id 1; name; witness = Type.Id.make () }

let rec find_in : type a. a key -> binding list -> a option =
 fun key -> function
  | [] -> None
  | Binding (k, v) :: rest -> (
      if k.id <> key.id then find_in key rest
      else
        match Type.Id.provably_equal k.witness key.witness with
        | Some Equal -> Some v
        | None -> find_in key rest)

let find key t = find_in key t.bindings

let rec bound key = function
  | [] -> false
  | Binding (k, _) :: rest -> k.id = key.id || bound key rest

(* The list itself when [key] is not in it: binding a key afresh (a request
   id, once per request) then costs the new cell and no copy of the
   others. *)
let others key bindings =
  if bound key bindings then
    List.filter (fun (Binding (k, _)) -> k.id <> key.id) bindings
  else bindings

let add key v t =
  { t with bindings = Binding (key, v) :: others key t.bindings }

let remove key t = { t with bindings = others key t.bindings }
let add_handler h t = { t with handlers = h :: t.handlers }

(* [handlers] is innermost first: each step wraps what is built so far, so
   the last one (the first added) ends up outermost. *)
let run_handlers t f =
  match t.handlers with
  | [] -> f ()
  | handlers ->
      let wrapped = List.fold_left (fun inner h () -> h.run inner) f handlers in
      wrapped ()
