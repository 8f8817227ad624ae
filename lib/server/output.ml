type t = {
  mutable buf : bytes;
  mutable len : int;
  write : bytes -> int -> int -> unit;
  storage : Braid_http.Input.storage option;
}

let create ?buffer ?storage ~size write =
  let buf =
    match (buffer, storage) with
    | Some b, _ when Bytes.length b >= 64 -> b
    | _, Some _ -> Bytes.empty
    | _, None -> Bytes.create (max size 64)
  in
  { buf; len = 0; write; storage }

let length t = t.len
let contents_from t start = Bytes.sub_string t.buf start (t.len - start)
let room t = Bytes.length t.buf - t.len

let release t =
  match t.storage with
  | Some s when t.len = 0 && Bytes.length t.buf > 0 ->
      s.give t.buf;
      t.buf <- Bytes.empty
  | _ -> ()

(* Released: take a buffer again before writing. *)
let attach t =
  match t.storage with
  | Some s ->
      let b = s.take () in
      if Bytes.length b < 64 then
        invalid_arg "Output: a storage buffer under 64 bytes";
      t.buf <- b
  | None -> invalid_arg "Output: no buffer"

let flush t =
  if t.len > 0 then (
    let n = t.len in
    t.len <- 0;
    t.write t.buf 0 n)

let flush_with t write =
  if t.len > 0 then (
    let n = t.len in
    t.len <- 0;
    write t.buf 0 n)

let rec grow t need =
  if Bytes.length t.buf = 0 then (
    attach t;
    if Bytes.length t.buf - t.len < need then grow t need)
  else
    let cap = ref (Bytes.length t.buf) in
    while !cap - t.len < need do
      cap := 2 * !cap
    done;
    let bigger = Bytes.create !cap in
    Bytes.blit t.buf 0 bigger 0 t.len;
    t.buf <- bigger

let ensure t need = if Bytes.length t.buf - t.len < need then grow t need

let add_string t s =
  let len = String.length s in
  if Bytes.length t.buf - t.len < len then grow t len;
  Bytes.unsafe_blit_string s 0 t.buf t.len len;
  t.len <- t.len + len

let add_field t name value =
  let n = String.length name and v = String.length value in
  let need = n + v + 4 in
  if Bytes.length t.buf - t.len < need then grow t need;
  let b = t.buf and i = t.len in
  Bytes.unsafe_blit_string name 0 b i n;
  Bytes.unsafe_set b (i + n) ':';
  Bytes.unsafe_set b (i + n + 1) ' ';
  Bytes.unsafe_blit_string value 0 b (i + n + 2) v;
  Bytes.unsafe_set b (i + n + 2 + v) '\r';
  Bytes.unsafe_set b (i + n + 3 + v) '\n';
  t.len <- i + need

let add_bytes t b off len =
  ensure t len;
  Bytes.unsafe_blit b off t.buf t.len len;
  t.len <- t.len + len

let add_char t c =
  ensure t 1;
  Bytes.unsafe_set t.buf t.len c;
  t.len <- t.len + 1

let rec digits n = if n < 10 then 1 else 1 + digits (n / 10)

(* [n]'s digits, the last at [i]. *)
let rec put_digits b n i =
  Bytes.unsafe_set b i (Char.unsafe_chr (48 + (n mod 10)));
  if n >= 10 then put_digits b (n / 10) (i - 1)

let add_int t n =
  if n < 0 then invalid_arg "Output.add_int";
  let d = digits n in
  ensure t d;
  put_digits t.buf n (t.len + d - 1);
  t.len <- t.len + d

let hex_digit = "0123456789abcdef"

let add_hex t n =
  if n < 0 then invalid_arg "Output.add_hex";
  let rec count n = if n < 16 then 1 else 1 + count (n lsr 4) in
  let d = count n in
  ensure t d;
  let rec go n i =
    Bytes.unsafe_set t.buf i hex_digit.[n land 15];
    if n >= 16 then go (n lsr 4) (i - 1)
  in
  go n (t.len + d - 1);
  t.len <- t.len + d

(* Copying beats a second system call below a few pages. *)
let send t buf off len =
  if len <= room t || len <= 4096 then add_bytes t buf off len
  else (
    flush t;
    t.write buf off len)

let fill_from t read =
  if Bytes.length t.buf = 0 then attach t;
  if room t = 0 then flush t;
  (* A buffer grown for a long head stays large: fine, it is reused. *)
  let n = read t.buf t.len (room t) in
  t.len <- t.len + n;
  n

type file_sender = {
  write_more : bytes -> int -> int -> unit;
  send_file : Unix.file_descr -> off:int -> len:int -> int;
}

exception Cannot_send_file
