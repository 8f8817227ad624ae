(** The Huffman code of HPACK (RFC 7541 §5.2 and Appendix B): string literals in
    header blocks may be sent in it.

    The code is the RFC's; this module holds only the bit length of each
    symbol's code and derives the codes from them, because the RFC's table is a
    canonical Huffman code (codes of one length are consecutive, in symbol
    order). Encoding adds each byte's code to an integer and writes it four
    bytes at a time; decoding runs a state machine over four bits at a time,
    with tables built once when the module is initialised. Pure: any domain.

    {[
      let encoded =
        let b = Buffer.create 16 in
        Huffman.encode b "www.example.com";
        Buffer.contents b
      in
      assert (String.length encoded = Huffman.encoded_length "www.example.com");
      assert (Huffman.decode_string encoded = Some "www.example.com")
    ]} *)

val code_of_symbol : int -> int * int
(** [code_of_symbol sym] is the code of byte [sym] (0-255, or 256 for EOS) and
    its length in bits, the code right-aligned: [code_of_symbol 0] is
    [(0x1ff8, 13)] as in the RFC's table.

    Raises [Invalid_argument] outside [0, 256]. *)

val encoded_length : string -> int
(** [encoded_length s] is the number of bytes [encode] writes for [s]. *)

val encode : Buffer.t -> string -> unit
(** [encode b s] appends [s] Huffman-coded, padded to a byte with the most
    significant bits of EOS (ones), as §5.2 requires. *)

val encode_into : ?length:int -> string -> bytes -> int -> int
(** [encode_into s dst off] writes what [encode] appends at [off] in [dst] (the
    [encoded_length s] bytes there) and returns the position after it. [length],
    when given, must be [encoded_length s]: a caller that computed it to choose
    Huffman spares the second pass over [s].

    Raises [Invalid_argument] if they do not fit. *)

val decode : bytes -> int -> int -> string option
(** [decode b off len] decodes the [len] bytes at [off]. [None] when they are
    not a valid coding (a decoding error of §5.2): they contain EOS, or end with
    padding longer than 7 bits or that is not all ones.

    Raises [Invalid_argument] if [off] and [len] are not a valid slice of [b].
*)

val decoded_bound : int -> int
(** [decoded_bound len] is the most bytes [len] coded bytes decode to (every
    code is at least 5 bits long). *)

val decode_into : bytes -> int -> int -> bytes -> int
(** [decode_into b off len dst] decodes the [len] bytes at [off] into [dst] from
    its start and returns how many bytes it wrote, or [-1] if they are not a
    valid coding ([decode]'s [None]); [dst] may then hold garbage.

    Raises [Invalid_argument] if [off] and [len] are not a valid slice of [b] or
    [dst] is shorter than [decoded_bound len]. *)

val decode_string : string -> string option
(** [decode_string s] is [decode] of the whole of [s]. *)
