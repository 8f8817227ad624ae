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
  }

let content_type t name ~lookup =
  if String.equal name t.typed && t.typed <> "" then t.content_type
  else
    let ty = lookup name in
    t.typed <- name;
    t.content_type <- ty;
    ty

let etag t (info : File.info) =
  match t.tagged with
  | Some seen
    when seen.inode = info.inode && seen.size = info.size
         && Float.equal seen.mtime info.mtime ->
      t.tag
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
