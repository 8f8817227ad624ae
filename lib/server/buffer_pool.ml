type t = {
  size : int;
  keep : int;
  mutable out : int;  (** Taken and not given back. *)
  mutable kept : bytes array;
      (** [kept.(0 .. count - 1)]: no allocation per give. *)
  mutable count : int;
  storage : Braid_http.Input.storage;
      (** Made once: a connection takes it each time it gets a fiber. *)
}

let size t = t.size
let kept t = t.count
let out t = t.out

let take t =
  t.out <- t.out + 1;
  if t.count = 0 then Bytes.create t.size
  else (
    t.count <- t.count - 1;
    let b = t.kept.(t.count) in
    t.kept.(t.count) <- Bytes.empty;
    b)

let give t b =
  if Bytes.length b = t.size then t.out <- t.out - 1;
  if Bytes.length b = t.size && t.count < t.keep then (
    if t.count = Array.length t.kept then (
      let bigger = Array.make (max 8 (2 * t.count)) Bytes.empty in
      Array.blit t.kept 0 bigger 0 t.count;
      t.kept <- bigger);
    t.kept.(t.count) <- b;
    t.count <- t.count + 1)

let create ~size ~keep =
  let rec t =
    {
      size;
      keep;
      out = 0;
      kept = [||];
      count = 0;
      storage = { take = (fun () -> take t); give = (fun b -> give t b) };
    }
  in
  t

let trim t =
  t.kept <- [||];
  t.count <- 0

let storage t = t.storage
