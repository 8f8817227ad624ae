open Braid_http

type source =
  | Wire of Request_body.t
  | Memory of { data : string; mutable pos : int }

type t = {
  source : source;
  home : Domain.id;  (** The connection's: the only one that may read. *)
  mutable continue : (unit -> unit) option;
  mutable failure : Parse_error.t option;
  mutable reading : bool;
  mutable closed : bool;
}

let create input limits framing ~continue =
  let continue = match framing with Request.No_body -> None | _ -> continue in
  {
    source = Wire (Request_body.create input limits framing);
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
  | Wire body ->
      if not (Request_body.is_finished body) then before_read t;
      note t (Request_body.read body buf off len)

let to_string t =
  reading t "Body.to_string" @@ fun () ->
  match t.source with
  | Memory m ->
      let s = String.sub m.data m.pos (String.length m.data - m.pos) in
      m.pos <- String.length m.data;
      Ok s
  | Wire body ->
      if not (Request_body.is_finished body) then before_read t;
      note t (Request_body.to_string body)

let drain t =
  reading t "Body.drain" @@ fun () ->
  match t.source with
  | Memory m ->
      m.pos <- String.length m.data;
      Ok ()
  | Wire body ->
      if not (Request_body.is_finished body) then before_read t;
      note t (Request_body.drain body)

let is_finished t =
  match t.source with
  | Memory m -> m.pos = String.length m.data
  | Wire body -> Request_body.is_finished body

let failure t = t.failure

let continue_pending t =
  match t.continue with Some _ -> not (is_finished t) | None -> false
