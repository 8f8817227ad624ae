(* The unconsumed bytes are [buf.[start .. start + length - 1]]. *)
type t = {
  fd : Fd.t;
  mutable buf : bytes;
  mutable start : int;
  mutable length : int;
  mutable ended : bool;  (** The stream has ended: no more reads. *)
}

exception Too_long of int

let of_fd ?(size = 4096) fd =
  if size < 1 then invalid_arg "Buf_read.of_fd: size < 1";
  { fd; buf = Bytes.create size; start = 0; length = 0; ended = false }

let buffered r = r.length

(* Reads more, making room first: unconsumed bytes move to the front, and
   the buffer doubles (up to [limit] bytes) only when they fill it. False
   at end of stream. Cancellation during the read loses nothing: the bytes
   buffered are still there. *)
let fill r ~limit =
  if r.ended then false
  else (
    if r.start > 0 then (
      Bytes.blit r.buf r.start r.buf 0 r.length;
      r.start <- 0);
    if r.length = Bytes.length r.buf then (
      let bigger = Bytes.create (min limit (2 * Bytes.length r.buf)) in
      Bytes.blit r.buf 0 bigger 0 r.length;
      r.buf <- bigger);
    match Fd.read_into r.fd r.buf r.length (Bytes.length r.buf - r.length) with
    | 0 ->
        r.ended <- true;
        false
    | n ->
        r.length <- r.length + n;
        true)

let consume r n =
  let s = Bytes.sub_string r.buf r.start n in
  r.start <- r.start + n;
  r.length <- r.length - n;
  if r.length = 0 then r.start <- 0;
  s

let take_buffered r = consume r r.length

(* The index (from [start]) of [c] among the buffered bytes, searching from
   [from]. *)
let find r c ~from =
  match Bytes.index_from_opt r.buf (r.start + from) c with
  | Some i when i < r.start + r.length -> Some (i - r.start)
  | Some _ | None -> None

let rec piece r c ~max ~searched =
  match find r c ~from:searched with
  | Some i when i <= max ->
      let s = consume r i in
      ignore (consume r 1 : string);
      Some s
  | Some _ -> raise (Too_long max)
  | None ->
      if r.length > max then raise (Too_long max)
      else
        let searched = r.length in
        if fill r ~limit:(max + 1) then piece r c ~max ~searched
        else if r.length = 0 then None
        else raise End_of_file

let until ?(max = 65536) r c = piece r c ~max ~searched:0

let line ?(max = 65536) r =
  let strip s =
    let n = String.length s in
    if n > 0 && s.[n - 1] = '\r' then String.sub s 0 (n - 1) else s
  in
  (* One byte more than [max]: the "\r" a line may end with. *)
  match piece r '\n' ~max:(max + 1) ~searched:0 with
  | Some s ->
      let s = strip s in
      if String.length s > max then raise (Too_long max) else Some s
  | None -> None
  | exception Too_long _ -> raise (Too_long max)
  | exception End_of_file ->
      (* A last line without its newline. *)
      Some (strip (take_buffered r))

let exactly r n =
  if n < 0 then invalid_arg "Buf_read.exactly: n < 0";
  let rec wait () =
    if r.length < n then
      if fill r ~limit:(max n (Bytes.length r.buf)) then wait ()
      else raise End_of_file
  in
  wait ();
  consume r n
