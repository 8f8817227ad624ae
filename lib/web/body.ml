open Braid_http

type source =
  | Wire of {
      body : Request_body.t;
      in_memory : int;
      temp_dir : string;
      spool : Spool_budget.t;
      declared : int;  (** The Content-Length, 0 if chunked. *)
    }
  | Memory of { data : string; mutable pos : int }

type t = {
  source : source;
  home : Domain.id;  (** The connection's: the only one that may read. *)
  mutable continue : (unit -> unit) option;
  mutable failure : Parse_error.t option;
  mutable reading : bool;
  mutable closed : bool;
}

let create ?source input limits framing ~continue ~in_memory ~temp_dir ~spool =
  let continue = match framing with Request.No_body -> None | _ -> continue in
  {
    source =
      Wire
        {
          body = Request_body.create ?source input limits framing;
          in_memory;
          temp_dir;
          spool;
          declared =
            (match framing with
            | Content_length n -> n
            | No_body | Chunked -> 0);
        };
    home = Domain.self ();
    continue;
    failure = None;
    reading = false;
    closed = false;
  }

let in_memory data =
  {
    source = Memory { data; pos = 0 };
    home = Domain.self ();
    continue = None;
    failure = None;
    reading = false;
    closed = false;
  }

(* Never closed nor read: the one value can serve every request. *)
let empty = in_memory ""
let of_string data = in_memory data
let close t = if t != empty then t.closed <- true

(* A wire body is read from the connection's input: from its loop's domain,
   by one fiber at a time, while the request lasts. Reading it from elsewhere
   would race the connection on its buffers, or steal the next request. *)
let reading t name f =
  match t.source with
  | Memory _ -> f ()
  | Wire _ -> (
      if t.closed then
        invalid_arg (name ^ ": the request is over (the body is closed)");
      if (Domain.self () :> int) <> (t.home :> int) then
        invalid_arg (name ^ ": called from another domain than the connection's");
      if t.reading then
        invalid_arg (name ^ ": another fiber is reading the body");
      t.reading <- true;
      match f () with
      | v ->
          t.reading <- false;
          v
      | exception e ->
          let bt = Printexc.get_raw_backtrace () in
          t.reading <- false;
          Printexc.raise_with_backtrace e bt)

let before_read t =
  match t.continue with
  | Some send ->
      t.continue <- None;
      send ()
  | None -> ()

let note t = function
  | Ok _ as ok -> ok
  | Error e as error ->
      if Option.is_none t.failure then t.failure <- Some e;
      error

let read t buf off len =
  if len <= 0 || off < 0 || off > Bytes.length buf - len then
    invalid_arg "Body.read";
  reading t "Body.read" @@ fun () ->
  match t.source with
  | Memory m ->
      let n = min len (String.length m.data - m.pos) in
      Bytes.blit_string m.data m.pos buf off n;
      m.pos <- m.pos + n;
      Ok n
  | Wire { body; _ } ->
      if not (Request_body.is_finished body) then before_read t;
      note t (Request_body.read body buf off len)

(* {1 Whole bodies, spooled}

   A whole-body read keeps [in_memory] bytes in memory; past that, what
   arrived goes to a temporary file, unlinked at once (nothing is left
   behind, whatever happens), and is read back once the body is complete.
   So an upload in progress holds at most [in_memory] bytes. The file's
   writes and the read back are system calls on the loop's domain: they
   copy into and out of the page cache, they do not wait for the disk.

   What goes to the file is reserved from the server's spool budget first,
   piece by piece, and given back when the file is closed, however the read
   ends (complete, failed, cancelled, or an exception from the write): so
   the bytes that bodies in progress hold on disk never pass the budget. A
   piece that does not fit ends the read with 503 (or 413 if the body alone
   would not fit in the budget), the connection closing. *)

let rec write_all fd buf off len =
  if len > 0 then
    let n = Unix.write fd buf off len in
    write_all fd buf (off + n) (len - n)

let open_spool temp_dir =
  let path = Filename.temp_file ~temp_dir "braid-body-" "" in
  match Unix.openfile path [ O_RDWR; O_CLOEXEC ] 0o600 with
  | fd ->
      Unix.unlink path;
      fd
  | exception e ->
      (try Unix.unlink path with Unix.Unix_error _ -> ());
      raise e

let read_back fd total =
  ignore (Unix.lseek fd 0 SEEK_SET);
  let out = Bytes.create total in
  let rec go off =
    if off < total then
      match Unix.read fd out off (total - off) with
      | 0 -> failwith "Body.to_string: the spooled body came back short"
      | n -> go (off + n)
  in
  go 0;
  Bytes.unsafe_to_string out

let spool_full =
  {
    Parse_error.status = 503;
    reason = "the server's spool for request bodies is full; retry later";
    close = true;
  }

let spool_too_large budget =
  {
    Parse_error.status = 413;
    reason =
      Printf.sprintf "body too large for the server's spool: limit %d bytes"
        (Spool_budget.limit budget);
    close = true;
  }

(* Raised by [take] inside [Request_body.iter] to stop it: the refusal is
   returned as the read's error. Local to [whole]. *)
exception Refused of Parse_error.t

let whole body ~in_memory ~temp_dir ~budget ~declared =
  let memory = Buffer.create (min in_memory 4096) in
  let spool = ref None and total = ref 0 and reserved = ref 0 in
  let reserve n =
    match Spool_budget.reserve budget ~held:!reserved ~total:declared n with
    | Ok () -> reserved := !reserved + n
    | Error Full -> raise_notrace (Refused spool_full)
    | Error Too_large -> raise_notrace (Refused (spool_too_large budget))
  in
  let take buf off len =
    total := !total + len;
    match !spool with
    | Some fd ->
        reserve len;
        write_all fd buf off len
    | None when Buffer.length memory + len <= in_memory ->
        Buffer.add_subbytes memory buf off len
    | None ->
        (* Reserved before the file exists: a refused body opens none. *)
        reserve (Buffer.length memory + len);
        let fd = open_spool temp_dir in
        spool := Some fd;
        write_all fd (Buffer.to_bytes memory) 0 (Buffer.length memory);
        Buffer.reset memory;
        write_all fd buf off len
  in
  (* The reservation first: a close that raises must not keep it. *)
  let close () =
    Spool_budget.release budget !reserved;
    reserved := 0;
    match !spool with
    | Some fd ->
        spool := None;
        Unix.close fd
    | None -> ()
  in
  match Request_body.iter body take with
  | Error _ as e ->
      close ();
      e
  | Ok () -> (
      match !spool with
      | None -> Ok (Buffer.contents memory)
      | Some fd ->
          Fun.protect ~finally:close (fun () -> Ok (read_back fd !total)))
  | exception Refused e ->
      close ();
      Error e
  | exception e ->
      let bt = Printexc.get_raw_backtrace () in
      close ();
      Printexc.raise_with_backtrace e bt

let to_string t =
  reading t "Body.to_string" @@ fun () ->
  match t.source with
  | Memory m ->
      let s = String.sub m.data m.pos (String.length m.data - m.pos) in
      m.pos <- String.length m.data;
      Ok s
  | Wire { body; in_memory; temp_dir; spool; declared } ->
      if not (Request_body.is_finished body) then before_read t;
      note t (whole body ~in_memory ~temp_dir ~budget:spool ~declared)

let drain t =
  reading t "Body.drain" @@ fun () ->
  match t.source with
  | Memory m ->
      m.pos <- String.length m.data;
      Ok ()
  | Wire { body; _ } ->
      if not (Request_body.is_finished body) then before_read t;
      note t (Request_body.drain body)

let is_finished t =
  match t.source with
  | Memory m -> m.pos = String.length m.data
  | Wire { body; _ } -> Request_body.is_finished body

let failure t = t.failure

let continue_pending t =
  match t.continue with Some _ -> not (is_finished t) | None -> false
