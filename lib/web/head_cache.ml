type t = {
  mutable asked_at : int;  (** Monotonic time of the last [clock ()]. *)
  mutable asked : float;  (** Its answer. *)
  mutable second : int;
  mutable line : string;
  seconds : int array;  (** Direct-mapped: the second formatted in each slot. *)
  dates : string array;
  mutable tagged : File.info option;  (** The file version of [tag]. *)
  mutable tag : string;
  mutable typed : string;  (** The file name of [content_type]. *)
  mutable content_type : string;
  mutable file_fields :
    (string * File.info * bool * (string * string) list) option;
      (** A file's name, version and [Vary], and the fields kept for them. *)
  mutable rendered : ((string * string) list * int * string) option;
      (** Fields (compared physically) and a length, and the text they were
          written as. *)
  mutable last_written : (string * string) list;
  mutable last_length : int;
      (** The fields last written without [rendered]: written again, they are
          kept rendered. *)
}

let slots = 64

let create () =
  {
    asked_at = min_int;
    asked = 0.;
    second = min_int;
    line = "";
    seconds = Array.make slots min_int;
    dates = Array.make slots "";
    tagged = None;
    tag = "";
    typed = "";
    content_type = "";
    file_fields = None;
    rendered = None;
    last_written = [];
    last_length = -1;
  }

let file_fields t name (info : File.info) ~vary =
  match t.file_fields with
  | Some (seen_name, seen, seen_vary, fields)
    when seen_vary = vary
         && File.same_version seen info
         && String.equal seen_name name ->
      Some fields
  | _ -> None

let keep_file_fields t name info ~vary fields =
  t.file_fields <- Some (name, info, vary, fields)

let rendered t fields ~length =
  match t.rendered with
  | Some (of_fields, of_length, text)
    when fields == of_fields && length = of_length ->
      Some text
  | _ -> None

let worth_rendering t fields ~length =
  if fields == [] then false
  else if fields == t.last_written && length = t.last_length then true
  else (
    t.last_written <- fields;
    t.last_length <- length;
    false)

let keep_rendered t fields ~length text =
  t.rendered <- Some (fields, length, text)

let content_type t name ~lookup =
  if String.equal name t.typed && t.typed <> "" then t.content_type
  else
    let ty = lookup name in
    t.typed <- name;
    t.content_type <- ty;
    ty

let etag t (info : File.info) =
  match t.tagged with
  | Some seen when File.same_version seen info -> t.tag
  | _ ->
      let tag =
        Braid_http.Entity_tag.(
          to_string
            (of_version ~inode:info.inode ~size:info.size ~mtime:info.mtime))
      in
      t.tagged <- Some info;
      t.tag <- tag;
      tag

let http_date t time =
  let second =
    if Float.is_nan time then 0 else int_of_float (Float.floor time)
  in
  let slot = second land (slots - 1) in
  if Array.unsafe_get t.seconds slot = second then Array.unsafe_get t.dates slot
  else
    let d = Braid_http.Http_date.format time in
    t.seconds.(slot) <- second;
    t.dates.(slot) <- d;
    d

let now t (services : Services.t) =
  let mono = services.monotonic_ns () in
  if
    t.asked_at = min_int
    || mono - t.asked_at >= 1_000_000_000
    || mono < t.asked_at
  then (
    t.asked <- services.now ();
    t.asked_at <- mono;
    t.asked)
  else t.asked +. (float_of_int (mono - t.asked_at) *. 1e-9)

let header_line t now =
  let second = if Float.is_nan now then 0 else int_of_float (Float.floor now) in
  if second <> t.second then (
    t.line <- "Date: " ^ Braid_http.Http_date.format now ^ "\r\n";
    t.second <- second);
  t.line
