(* Bit lengths of the codes of symbols 0-255 and EOS (256), from the table of
   RFC 7541 Appendix B. The codes themselves follow: the table is canonical,
   so a code is the previous one plus one, shifted left when the length
   grows, with symbols taken in order of (length, symbol). *)
let code_lengths =
  [| 13; 23; 28; 28; 28; 28; 28; 28; 28; 24; 30; 28; 28; 30; 28; 28; (* 0 *)
     28; 28; 28; 28; 28; 28; 30; 28; 28; 28; 28; 28; 28; 28; 28; 28; (* 16 *)
     6; 10; 10; 12; 13; 6; 8; 11; 10; 10; 8; 11; 8; 6; 6; 6; (* ' ' *)
     5; 5; 5; 6; 6; 6; 6; 6; 6; 6; 7; 8; 15; 6; 12; 10; (* '0' *)
     13; 6; 7; 7; 7; 7; 7; 7; 7; 7; 7; 7; 7; 7; 7; 7; (* '@' *)
     7; 7; 7; 7; 7; 7; 7; 7; 8; 7; 8; 13; 19; 13; 14; 6; (* 'P' *)
     15; 5; 6; 5; 6; 5; 6; 6; 6; 5; 7; 7; 6; 6; 6; 5; (* '`' *)
     6; 7; 6; 5; 5; 6; 7; 7; 7; 7; 7; 15; 11; 14; 13; 28; (* 'p' *)
     20; 22; 20; 20; 22; 22; 22; 23; 22; 23; 23; 23; 23; 23; 24; 23; (* 128 *)
     24; 24; 22; 23; 24; 23; 23; 23; 23; 21; 22; 23; 22; 23; 23; 24; (* 144 *)
     22; 21; 20; 22; 22; 23; 23; 21; 23; 22; 22; 24; 21; 22; 23; 23; (* 160 *)
     21; 21; 22; 21; 23; 22; 23; 23; 20; 22; 22; 22; 23; 22; 22; 23; (* 176 *)
     26; 26; 20; 19; 22; 23; 22; 25; 26; 26; 26; 27; 27; 26; 24; 25; (* 192 *)
     19; 21; 26; 27; 27; 26; 27; 24; 21; 21; 26; 26; 28; 27; 27; 27; (* 208 *)
     20; 24; 20; 21; 22; 21; 21; 23; 22; 22; 25; 25; 24; 24; 26; 23; (* 224 *)
     26; 27; 26; 26; 27; 27; 27; 27; 27; 28; 27; 27; 27; 27; 27; 26; (* 240 *)
     30 (* EOS *) |]
[@@ocamlformat "disable"]

let eos = 256

let codes =
  let symbols = List.init 257 Fun.id in
  let by_length =
    List.stable_sort
      (fun a b -> compare code_lengths.(a) code_lengths.(b))
      symbols
  in
  let codes = Array.make 257 0 in
  let _ =
    List.fold_left
      (fun (next, length) sym ->
        let l = code_lengths.(sym) in
        let next = next lsl (l - length) in
        codes.(sym) <- next;
        (next + 1, l))
      (0, code_lengths.(List.hd by_length))
      by_length
  in
  codes

let code_of_symbol sym =
  if sym < 0 || sym > eos then invalid_arg "Huffman.code_of_symbol";
  (codes.(sym), code_lengths.(sym))

(* The lengths again as bytes: a load from a string needs no bounds check
   nor tag, and the encoder's loops read it once per input byte. *)
let length_bytes = String.init 256 (fun sym -> Char.chr code_lengths.(sym))

let encoded_length s =
  let bits = ref 0 in
  for i = 0 to String.length s - 1 do
    bits :=
      !bits
      + Char.code
          (String.unsafe_get length_bytes (Char.code (String.unsafe_get s i)))
  done;
  (!bits + 7) / 8

external unsafe_set_int32_ne : bytes -> int -> int32 -> unit
  = "%caml_bytes_set32u"

external bswap32 : int32 -> int32 = "%bswap_int32"

let set_u32_be b i n =
  let n = Int32.of_int n in
  unsafe_set_int32_ne b i (if Sys.big_endian then n else bswap32 n)

let encode_into ?length s dst off =
  (* A code takes at most 30 bits, so four bytes a byte always fit; only
     when they do not is the exact length worth computing, unless the caller
     has it already (it chose Huffman by it). *)
  if
    off < 0
    || off > Bytes.length dst - (4 * String.length s)
       &&
       let length =
         match length with Some n -> n | None -> encoded_length s
       in
       off > Bytes.length dst - length
  then invalid_arg "Huffman.encode_into";
  (* [acc] holds the [n] bits not yet written, right-aligned: fewer than 32
     before a code is added, so at most 61 after, within an OCaml int. Four
     bytes go out at a time. *)
  let acc = ref 0 and n = ref 0 and p = ref off in
  for i = 0 to String.length s - 1 do
    let sym = Char.code (String.unsafe_get s i) in
    let l = Char.code (String.unsafe_get length_bytes sym) in
    acc := (!acc lsl l) lor Array.unsafe_get codes sym;
    n := !n + l;
    if !n >= 32 then (
      n := !n - 32;
      set_u32_be dst !p (!acc lsr !n);
      p := !p + 4;
      acc := !acc land ((1 lsl !n) - 1))
  done;
  (* The last bits, padded to a byte with the most significant bits of EOS
     (ones). *)
  let pad = (8 - (!n land 7)) land 7 in
  let acc = (!acc lsl pad) lor ((1 lsl pad) - 1) and n = !n + pad in
  for k = 1 to n / 8 do
    Bytes.unsafe_set dst !p
      (Char.unsafe_chr ((acc lsr (n - (8 * k))) land 0xff));
    incr p
  done;
  !p

let encode b s =
  let n = encoded_length s in
  let out = Bytes.create n in
  ignore (encode_into ~length:n s out 0);
  Buffer.add_bytes b out

(* {1 Decoding}

   The code as a binary tree: 257 leaves, so 256 internal nodes, numbered
   from the root (0) in the order they are created. The decoder's state is
   the internal node the bits read so far lead to; every code is at least 5
   bits long, so four bits complete at most one symbol. [transitions] gives,
   for a state and the next four bits, the packed outcome:
   - bits 0-7: the state after them;
   - bit 8: a symbol was completed, bits 9-16: which;
   - bit 17: they complete EOS, a decoding error.
   [accepting.(state)]: the input may end in [state], because the bits since
   the last symbol are all ones and at most 7 of them (§5.2's padding). *)

let emitted = 1 lsl 8
let failed = 1 lsl 17

let transitions, accepting =
  (* Children of internal nodes: a non-negative child is an internal node,
     [-1 - sym] is the leaf of [sym]. *)
  let zero = Array.make 256 0 and one = Array.make 256 0 in
  let nodes = ref 1 in
  let unset = min_int in
  Array.fill zero 0 256 unset;
  Array.fill one 0 256 unset;
  for sym = 0 to eos do
    let code = codes.(sym) and length = code_lengths.(sym) in
    let node = ref 0 in
    for bit = length - 1 downto 0 do
      let children = if (code lsr bit) land 1 = 0 then zero else one in
      if bit = 0 then children.(!node) <- -1 - sym
      else (
        if children.(!node) = unset then (
          children.(!node) <- !nodes;
          incr nodes);
        node := children.(!node))
    done
  done;
  assert (!nodes = 256);
  let transitions = Array.make (256 * 16) 0 in
  for state = 0 to 255 do
    for nibble = 0 to 15 do
      let node = ref state and outcome = ref 0 in
      for bit = 3 downto 0 do
        let children = if (nibble lsr bit) land 1 = 0 then zero else one in
        let child = children.(!node) in
        if child >= 0 then node := child
        else
          let sym = -1 - child in
          if sym = eos then outcome := failed
          else if !outcome land failed = 0 then
            outcome := emitted lor (sym lsl 9);
          node := 0
      done;
      transitions.((state * 16) + nibble) <- !outcome lor !node
    done
  done;
  let accepting = Array.make 256 false in
  (* The all-ones path from the root, up to 7 deep. *)
  let node = ref 0 in
  accepting.(0) <- true;
  for _ = 1 to 7 do
    node := one.(!node);
    accepting.(!node) <- true
  done;
  (transitions, accepting)

let decoded_bound len = (len * 8 / 5) + 1

let decode_into b off len dst =
  if off < 0 || len < 0 || off > Bytes.length b - len then
    invalid_arg "Huffman.decode_into";
  if Bytes.length dst < decoded_bound len then
    invalid_arg "Huffman.decode_into: destination too small";
  (* At most 8 / 5 symbols a byte: codes are at least 5 bits long. Each
     nibble is a look-up; [failed] taints the state for good, so that the
     loop tests it once at the end. *)
  let written = ref 0 and state = ref 0 and bad = ref 0 in
  for i = off to off + len - 1 do
    let byte = Char.code (Bytes.unsafe_get b i) in
    let t = Array.unsafe_get transitions ((!state lsl 4) lor (byte lsr 4)) in
    if t land emitted <> 0 then (
      Bytes.unsafe_set dst !written (Char.unsafe_chr ((t lsr 9) land 0xff));
      incr written);
    let t' =
      Array.unsafe_get transitions (((t land 0xff) lsl 4) lor (byte land 0xf))
    in
    if t' land emitted <> 0 then (
      Bytes.unsafe_set dst !written (Char.unsafe_chr ((t' lsr 9) land 0xff));
      incr written);
    bad := !bad lor t lor t';
    state := t' land 0xff
  done;
  if !bad land failed <> 0 || not (Array.unsafe_get accepting !state) then -1
  else !written

let decode b off len =
  if off < 0 || len < 0 || off > Bytes.length b - len then
    invalid_arg "Huffman.decode";
  let out = Bytes.create (decoded_bound len) in
  match decode_into b off len out with
  | -1 -> None
  | n -> Some (Bytes.sub_string out 0 n)

let decode_string s = decode (Bytes.unsafe_of_string s) 0 (String.length s)
