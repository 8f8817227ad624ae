open Braid_http

type source =
  | Wire of Request_body.t
  | Memory of { data : string; mutable pos : int }

type t = {
  source : source;
  mutable continue : (unit -> unit) option;
  mutable failure : Parse_error.t option;
}

let create input limits framing ~continue =
  let continue = match framing with Request.No_body -> None | _ -> continue in
  {
    source = Wire (Request_body.create input limits framing);
    continue;
    failure = None;
  }

let empty =
  { source = Memory { data = ""; pos = 0 }; continue = None; failure = None }

let of_string data =
  { source = Memory { data; pos = 0 }; continue = None; failure = None }

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
  match t.source with
  | Memory m ->
      let s = String.sub m.data m.pos (String.length m.data - m.pos) in
      m.pos <- String.length m.data;
      Ok s
  | Wire body ->
      if not (Request_body.is_finished body) then before_read t;
      note t (Request_body.to_string body)

let drain t =
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
