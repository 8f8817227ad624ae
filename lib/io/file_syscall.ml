external read_stub : Unix.file_descr -> bytes -> int -> int -> int -> int
  = "braid_io_file_read"

external write_stub : Unix.file_descr -> string -> int -> int -> int -> int
  = "braid_io_file_write"

(* file_stubs.c caps each call at the same size. *)
let chunk = 1 lsl 20
let read fd buf off len ~at = read_stub fd buf off len at

type bounce =
  (char, Bigarray.int8_unsigned_elt, Bigarray.c_layout) Bigarray.Array1.t

external read_bounce_stub : Unix.file_descr -> bounce -> int -> int -> int
  = "braid_io_file_read_bigarray"

external blit_bounce_stub : bounce -> int -> bytes -> int -> int -> unit
  = "braid_io_file_blit_bigarray"
[@@noalloc]

let create_bounce size =
  Bigarray.Array1.create Bigarray.char Bigarray.c_layout size

let read_bounce fd bounce len ~at =
  read_bounce_stub fd bounce (min len (Bigarray.Array1.dim bounce)) at

let blit_bounce bounce buf off len =
  if
    len < 0
    || len > Bigarray.Array1.dim bounce
    || off < 0
    || off > Bytes.length buf - len
  then invalid_arg "File_syscall.blit_bounce";
  blit_bounce_stub bounce 0 buf off len

let write_all fd data off len ~at =
  let rec from written =
    if written < len then
      let at = if at < 0 then at else at + written in
      from (written + write_stub fd data (off + written) (len - written) at)
  in
  from 0

(* The file's size is only a hint (it may grow or shrink while we read): the
   buffer grows as needed, and the first read past the hint checks the end. *)
let read_to_end fd =
  let hint =
    match Unix.fstat fd with
    | { st_kind = S_REG; st_size; _ } -> st_size + 1
    | _ -> 65536
    | exception Unix.Unix_error _ ->
        (* fstat only sizes the buffer; the reads report real errors. *)
        65536
  in
  let rec fill buf filled =
    let buf =
      if filled < Bytes.length buf then buf
      else Bytes.extend buf 0 (max 65536 (Bytes.length buf))
    in
    match read fd buf filled (Bytes.length buf - filled) ~at:(-1) with
    | 0 -> Bytes.sub_string buf 0 filled
    | n -> fill buf (filled + n)
  in
  fill (Bytes.create (max 1 hint)) 0

let with_path = Io_error.with_detail
