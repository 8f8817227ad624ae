type t = {
  size : int;
  keep : int;
  mutable out : int;  (** Taken and not given back. *)
  mutable peak : int;  (** Most [out] since the last [trim]. *)
  mutable kept : bytes array;
      (** [kept.(0 .. count - 1)]: no allocation per give. *)
  mutable count : int;
  storage : Braid_http.Input.storage;
      (** Made once: a connection takes it each time it gets a fiber. *)
}

let size t = t.size
let kept t = t.count
let out t = t.out

(* A burst takes as many buffers at once as the connections it wakes: kept
   for the next burst rather than dropped, they are not garbage for the
   major collector to mark and sweep, then allocated again (at 10,000
   connections, each request allocated about 260 words of buffers with a
   fixed [keep] of 64). Never more than [headroom] times [keep]; [trim], in
   a lull, gives them all back. *)
let headroom = 16

let take t =
  t.out <- t.out + 1;
  if t.out > t.peak then t.peak <- t.out;
  if t.count = 0 then Bytes.create t.size
  else (
    t.count <- t.count - 1;
    let b = t.kept.(t.count) in
    t.kept.(t.count) <- Bytes.empty;
    b)

let give t b =
  if Bytes.length b = t.size then t.out <- t.out - 1;
  if
    Bytes.length b = t.size
    && t.count < max t.keep (min t.peak (headroom * t.keep))
  then (
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
      peak = 0;
      kept = [||];
      count = 0;
      storage = { take = (fun () -> take t); give = (fun b -> give t b) };
    }
  in
  t

let trim t =
  t.kept <- [||];
  t.count <- 0;
  t.peak <- t.out

let storage t = t.storage
