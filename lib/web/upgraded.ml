exception Shutdown

type t = {
  peer : Unix.sockaddr option;
  mutable pending : string;
  mutable pending_pos : int;
  read_fn : bytes -> int -> int -> int;
  write_fn : bytes -> int -> int -> unit;
  draining : unit -> bool;
  mutable reading : bool;
  mutable writing : bool;
  mutable finished : bool;
  mutable io_error : exn option;
}

let make ?peer ?(buffered = "") ?(shutting_down = fun () -> false) ~read ~write
    () =
  {
    peer;
    pending = buffered;
    pending_pos = 0;
    read_fn = read;
    write_fn = write;
    draining = shutting_down;
    reading = false;
    writing = false;
    finished = false;
    io_error = None;
  }

let check_valid t name =
  if t.finished then
    invalid_arg ("Braid_web.Upgraded." ^ name ^ ": the upgrade has ended")

let buffered t = String.length t.pending - t.pending_pos
let peer t = t.peer
let shutting_down t = t.draining ()
let finish t = t.finished <- true
let failed_io t e = match t.io_error with Some e' -> e == e' | None -> false

(* The underlying function's own failure is remembered, so that the
   pipeline can tell a reset from a protocol's bug. Written out in [read]
   and [write_bytes] rather than with closures: they run per message. *)
let note_failure t = function
  | Braid.Cancelled | Shutdown -> ()
  | e -> t.io_error <- Some e

let read t buf off len =
  check_valid t "read";
  if off < 0 || len < 0 || off > Bytes.length buf - len then
    invalid_arg "Braid_web.Upgraded.read";
  if t.reading then
    invalid_arg "Braid_web.Upgraded.read: another fiber is reading";
  let available = buffered t in
  if len = 0 then 0
  else if available > 0 then (
    let n = min len available in
    Bytes.blit_string t.pending t.pending_pos buf off n;
    t.pending_pos <- t.pending_pos + n;
    if buffered t = 0 then (
      t.pending <- "";
      t.pending_pos <- 0);
    n)
  else if t.draining () then raise Shutdown
  else (
    t.reading <- true;
    match t.read_fn buf off len with
    | n ->
        t.reading <- false;
        n
    | exception e ->
        let bt = Printexc.get_raw_backtrace () in
        t.reading <- false;
        note_failure t e;
        Printexc.raise_with_backtrace e bt)

let write_bytes t buf off len =
  check_valid t "write";
  if off < 0 || len < 0 || off > Bytes.length buf - len then
    invalid_arg "Braid_web.Upgraded.write_bytes";
  if t.writing then
    invalid_arg "Braid_web.Upgraded.write: another fiber is writing";
  if len > 0 then (
    t.writing <- true;
    match t.write_fn buf off len with
    | () -> t.writing <- false
    | exception e ->
        let bt = Printexc.get_raw_backtrace () in
        t.writing <- false;
        note_failure t e;
        Printexc.raise_with_backtrace e bt)

let write t s = write_bytes t (Bytes.unsafe_of_string s) 0 (String.length s)
