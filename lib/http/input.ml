type storage = { take : unit -> bytes; give : bytes -> unit }

type t = {
  mutable buf : bytes;
  mutable pos : int;
  mutable lim : int;
  mutable capacity : int;
  storage : storage option;
  reader : (bytes -> int -> int -> int) option;
}

type _ Effect.t += Refill : t -> int Effect.t

let make ?storage ?reader buf lim =
  { buf; pos = 0; lim; capacity = Bytes.length buf; storage; reader }

let create ?(size = 4096) ?buffer ?storage ?read () =
  match (buffer, storage) with
  | Some b, _ when Bytes.length b >= 16 -> make ?storage ?reader:read b 0
  | _, Some _ -> make ?storage ?reader:read Bytes.empty 0
  | _, None -> make ?reader:read (Bytes.create (max size 16)) 0

let release t =
  match t.storage with
  | Some s when t.pos = t.lim && t.capacity > 0 ->
      s.give t.buf;
      t.buf <- Bytes.empty;
      t.capacity <- 0;
      t.pos <- 0;
      t.lim <- 0
  | _ -> ()

let of_string s = make (Bytes.of_string s) (String.length s)
let length t = t.lim - t.pos

let consume t n =
  if n < 0 || n > t.lim - t.pos then invalid_arg "Input.consume";
  t.pos <- t.pos + n

(* Leave at least a quarter of the buffer free after [lim], so a socket read
   is never asked for a handful of bytes. The window moves to the front when
   it fills at most half of the buffer, else the buffer doubles: the parsers
   bound the window by their limits, so growth is bounded too. *)
let rec make_room t =
  let capacity = t.capacity in
  match t.storage with
  | Some s when capacity = 0 ->
      (* Released: the window is empty, take a buffer again. *)
      let b = s.take () in
      if Bytes.length b < 16 then
        invalid_arg "Input: a storage buffer under 16 bytes";
      t.buf <- b;
      t.capacity <- Bytes.length b;
      make_room t
  | _ ->
      if t.pos = t.lim then (
        t.pos <- 0;
        t.lim <- 0)
      else if capacity - t.lim < capacity / 4 then (
        let n = t.lim - t.pos in
        (if n <= capacity / 2 then Bytes.blit t.buf t.pos t.buf 0 n
         else
           let bigger = Bytes.create (2 * capacity) in
           Bytes.blit t.buf t.pos bigger 0 n;
           t.buf <- bigger;
           t.capacity <- 2 * capacity);
        t.pos <- 0;
        t.lim <- n)

let fill t read =
  make_room t;
  let room = t.capacity - t.lim in
  let n = read t.buf t.lim room in
  if n < 0 || n > room then invalid_arg "Input.fill: read returned a bad count";
  t.lim <- t.lim + n;
  n

(* An input with its own reader needs no handler: a refill is a call. *)
let refill t =
  match t.reader with
  | Some read -> fill t read
  | None -> Effect.perform (Refill t)

let handle (type a) t read (f : unit -> a) : a =
  (* Built once per [handle], so answering a refill allocates nothing (the
     refill itself allocates the effect and the continuation). *)
  let answer (k : (int, a) Effect.Deep.continuation) =
    match fill t read with
    | n -> Effect.Deep.continue k n
    | exception e ->
        let bt = Printexc.get_raw_backtrace () in
        Effect.Deep.discontinue_with_backtrace k e bt
  in
  let some_answer = Some answer in
  Effect.Deep.try_with f ()
    {
      effc =
        (fun (type b) (e : b Effect.t) ->
          match e with
          | Refill input when input == t ->
              (some_answer : ((b, a) Effect.Deep.continuation -> a) option)
          | _ -> None);
    }

let with_reader ?size ?buffer read f =
  let t = create ?size ?buffer () in
  handle t read (fun () -> f t)

(* [Stdlib.min] is polymorphic: a call to the generic comparison. *)
let min (a : int) b = if a < b then a else b
let end_of_input _ _ _ = 0

let with_string s f =
  let t = of_string s in
  handle t end_of_input (fun () -> f t)

let with_chunks ?size chunks f =
  let rest = ref chunks and offset = ref 0 in
  let rec read buf off len =
    match !rest with
    | [] -> 0
    | chunk :: more ->
        let left = String.length chunk - !offset in
        if left = 0 then (
          rest := more;
          offset := 0;
          read buf off len)
        else
          let n = min left len in
          Bytes.blit_string chunk !offset buf off n;
          if n = left then (
            rest := more;
            offset := 0)
          else offset := !offset + n;
          n
  in
  with_reader ?size read f
