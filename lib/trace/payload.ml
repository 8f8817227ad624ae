type t = {
  mutable a : int;
  mutable b : int;
  mutable c : int;
  mutable s1 : string;
  mutable s2 : string;
  mutable s3 : string;
}

let make () = { a = 0; b = 0; c = 0; s1 = ""; s2 = ""; s3 = "" }

(* Int.min and Int.max, not the polymorphic ones: those call the runtime's
   compare, which cost a third of this encoder in a request's trace.
   Runtime_events bounds a value to 1024 bytes: three integers take 24, and
   each string a 2-byte length; strings are cut to what is left, once the
   lengths of the strings after them have their room. *)
let max_bytes = 1024
let length_bytes = 2

let put_string buf pos s ~strings_after =
  let room =
    Int.max 0 (max_bytes - pos - (length_bytes * (1 + strings_after)))
  in
  let n = Int.min room (String.length s) in
  Bytes.set_uint16_le buf pos n;
  Bytes.blit_string s 0 buf (pos + length_bytes) n;
  pos + length_bytes + n

let encode buf p =
  Bytes.set_int64_le buf 0 (Int64.of_int p.a);
  Bytes.set_int64_le buf 8 (Int64.of_int p.b);
  Bytes.set_int64_le buf 16 (Int64.of_int p.c);
  let pos = put_string buf 24 p.s1 ~strings_after:2 in
  let pos = put_string buf pos p.s2 ~strings_after:1 in
  put_string buf pos p.s3 ~strings_after:0

let get_string buf pos len =
  if pos + 2 > len then ("", pos)
  else
    let n = Int.min (Bytes.get_uint16_le buf pos) (len - pos - 2) in
    (Bytes.sub_string buf (pos + 2) n, pos + 2 + n)

let decode buf len =
  let int at =
    if at + 8 <= len then Int64.to_int (Bytes.get_int64_le buf at) else 0
  in
  let s1, pos = get_string buf 24 len in
  let s2, pos = get_string buf pos len in
  let s3, _ = get_string buf pos len in
  { a = int 0; b = int 8; c = int 16; s1; s2; s3 }

let ty = Runtime_events.Type.register ~encode ~decode
let scratch_key = Domain.DLS.new_key make
let scratch () = Domain.DLS.get scratch_key
