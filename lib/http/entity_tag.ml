type t = { weak : bool; opaque : string }

(* etagc = "!" / %x23-7E / obs-text: visible bytes but the double quote. *)
let is_etagc c = c = '!' || (c >= '#' && c <> '\x7f')

let strong opaque =
  if not (String.for_all is_etagc opaque) then
    invalid_arg "Entity_tag.strong: a byte an entity tag may not hold";
  { weak = false; opaque }

let hex_digits = "0123456789abcdef"

(* Hexadecimal digits of [n >= 0]. *)
let hex_length n =
  let rec count n d = if n < 16 then d else count (n lsr 4) (d + 1) in
  count n 1

(* [n]'s digits, ending just before [stop]. *)
let put_hex b ~stop n =
  let rec go n i =
    Bytes.unsafe_set b i (String.unsafe_get hex_digits (n land 15));
    if n >= 16 then go (n lsr 4) (i - 1)
  in
  go n (stop - 1)

(* Not Printf, and one allocation: the static server makes one per
   response. *)
let of_version ~inode ~size ~mtime =
  let inode = abs inode and size = abs size in
  let micros = Float.to_int (Float.max 0. (mtime *. 1e6)) in
  let li = hex_length inode and ls = hex_length size in
  let lm = hex_length micros in
  let b = Bytes.create (li + ls + lm + 2) in
  put_hex b ~stop:li inode;
  Bytes.unsafe_set b li '-';
  put_hex b ~stop:(li + 1 + ls) size;
  Bytes.unsafe_set b (li + 1 + ls) '-';
  put_hex b ~stop:(li + ls + lm + 2) micros;
  { weak = false; opaque = Bytes.unsafe_to_string b }

let to_string t =
  let n = String.length t.opaque and w = if t.weak then 2 else 0 in
  let b = Bytes.create (n + w + 2) in
  if t.weak then Bytes.blit_string "W/" 0 b 0 2;
  Bytes.unsafe_set b w '"';
  Bytes.blit_string t.opaque 0 b (w + 1) n;
  Bytes.unsafe_set b (w + n + 1) '"';
  Bytes.unsafe_to_string b

(* [s] as one entity-tag, with no surrounding whitespace. Field values
   hold no CR, LF or other control, so [String.trim] removes exactly the
   optional whitespace around list members. *)
let tag_of s =
  let n = String.length s in
  let weak = n >= 2 && s.[0] = 'W' && s.[1] = '/' in
  let i = if weak then 2 else 0 in
  if n - i < 2 || s.[i] <> '"' || s.[n - 1] <> '"' then None
  else
    let opaque = String.sub s (i + 1) (n - i - 2) in
    if String.for_all is_etagc opaque then Some { weak; opaque } else None

let of_string s = tag_of (String.trim s)

let strong_match a b =
  (not a.weak) && (not b.weak) && String.equal a.opaque b.opaque

let weak_match a b = String.equal a.opaque b.opaque

type condition = Any | Tags of t list

exception Malformed

(* The members of one field line, in order; empty members are skipped
   (§5.6.1.2). An opaque tag may hold a comma: members end at a comma
   outside double quotes. *)
let members line acc =
  let n = String.length line in
  let rec member start i quoted acc =
    if i = n || ((not quoted) && line.[i] = ',') then
      let acc =
        match String.trim (String.sub line start (i - start)) with
        | "" -> acc
        | "*" -> `Any :: acc
        | m -> (
            match tag_of m with
            | Some tag -> `Tag tag :: acc
            | None -> raise Malformed)
      in
      if i = n then acc else member (i + 1) (i + 1) false acc
    else
      member start (i + 1) (if line.[i] = '"' then not quoted else quoted) acc
  in
  member 0 0 false acc

let condition lines =
  match List.fold_left (fun acc line -> members line acc) [] lines with
  | exception Malformed -> None
  | [] -> None
  | [ `Any ] -> Some Any
  | all ->
      let tags =
        List.filter_map (function `Tag t -> Some t | `Any -> None) all
      in
      (* "*" only alone. *)
      if List.compare_lengths tags all <> 0 then None
      else Some (Tags (List.rev tags))

let holds c matches =
  match c with Any -> true | Tags tags -> List.exists matches tags
