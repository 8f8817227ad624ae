(** HPACK, the header compression of HTTP/2 (RFC 7541): a {!Decoder} for the
    field blocks a peer sends and an {!Encoder} for the ones sent to it.

    Each side of a connection keeps one decoder and one encoder for the whole
    connection: field blocks must be decoded in the order they arrive, all of
    them, including blocks of streams about to be reset, or the dynamic tables
    of the two ends fall out of step (RFC 9113 §4.3).

    {[
      let encoder = Hpack.Encoder.create () in
      let block = Buffer.create 64 in
      Hpack.Encoder.encode encoder block
        [ (":method", "GET"); (":path", "/"); ("user-agent", "braid") ];
      let decoder = Hpack.Decoder.create () in
      match Hpack.Decoder.decode_string decoder (Buffer.contents block) with
      | Ok headers ->
          assert (List.length headers.pseudo = 2);
          assert ((List.hd headers.regular).value = "braid")
      | Error _ -> assert false
    ]} *)

type field = {
  name : string;
  value : string;
  never_indexed : bool;
      (** Sent as never indexed (§6.2.3): an intermediary must forward it the
          same way. *)
}

type header_list = {
  pseudo : field list;
      (** The pseudo-header fields (names starting with [':']), in order. *)
  regular : field list;  (** The other fields, in order. *)
}
(** A decoded field block. RFC 9113 §8.3 puts every pseudo-header field before
    the regular ones; a block that does not is {!Decoder.Malformed}, so
    splitting it loses no order. *)

val static_table_length : int
(** 61: indices 1-61 name the static table (Appendix A), the dynamic table
    follows from 62. *)

(** {1 Decoding} *)

module Decoder : sig
  type t
  (** The decoding context of one connection. Not safe to share between domains
      without a lock (it is mutable). *)

  val create : ?max_table_size:int -> ?max_header_list_size:int -> unit -> t
  (** [create ()] is a decoder whose dynamic table may hold up to
      [max_table_size] bytes (default 4096, the protocol's initial
      SETTINGS_HEADER_TABLE_SIZE), which accepts header lists of up to
      [max_header_list_size] bytes (default 65536; the size counts 32 plus the
      length of the name and the value of each field, as
      SETTINGS_MAX_HEADER_LIST_SIZE does).

      Raises [Invalid_argument] if a size is negative. *)

  val set_max_table_size : t -> int -> unit
  (** [set_max_table_size t n]: the SETTINGS_HEADER_TABLE_SIZE of [n] this
      endpoint sent has been acknowledged. The peer's table size updates must
      then be at most [n]; when [n] is below the size the table has, the next
      block must begin with an update to at most [n] (RFC 7541 §4.2), else it is
      a {!Compression_error}. *)

  type error =
    | Compression_error of string
        (** The block is not valid HPACK (a bad index or integer, a truncated
            string, bad Huffman coding, a table size update out of place or too
            large). A connection error COMPRESSION_ERROR: the tables are out of
            step, and this decoder refuses every later block. *)
    | Header_list_too_large of { limit : int }
        (** The decoded list exceeds [max_header_list_size]. The block was still
            decoded to its end, so the table stays in step, but fields past the
            limit were not kept: the cost of a small block that names large
            table entries many times (an "HPACK bomb") stays bounded by its
            encoded size. The stream may be answered with 431 (RFC 9113 §10.5.1)
            or reset. *)
    | Malformed of string
        (** Valid HPACK, but not a valid HTTP/2 field list (RFC 9113 §8.2.1,
            §8.3): an empty name, an uppercase letter, a control character, a
            space or a misplaced colon in a name; NUL, CR or LF in a value, or a
            value that starts or ends with a space or a tab; a pseudo-header
            after a regular field. A stream error PROTOCOL_ERROR; the table
            stays in step. *)

  val pp_error : Format.formatter -> error -> unit

  val decode : t -> bytes -> int -> int -> (header_list, error) result
  (** [decode t b off len] decodes the complete field block held in the [len]
      bytes at [off] (a HEADERS fragment and its CONTINUATIONs, joined),
      updating the dynamic table.

      Raises [Invalid_argument] if [off] and [len] are not a valid slice of [b].
  *)

  val decode_string : t -> string -> (header_list, error) result
  (** [decode_string t s] is [decode] of the whole of [s]. *)

  val to_violation : stream:int -> error -> Violation.t
  (** [to_violation ~stream e] is the error RFC 9113 says to answer [e] on
      [stream] with: a connection error COMPRESSION_ERROR for
      {!Compression_error}, a stream error PROTOCOL_ERROR otherwise (a server
      that can answer {!Header_list_too_large} with a 431 response does that
      instead). *)

  val table_size : t -> int
  (** The dynamic table's size, in RFC 7541 §4.1's accounting. *)

  val table_entries : t -> (string * string) list
  (** The dynamic table's entries, newest (index 62) first. *)
end

(** {1 Encoding} *)

(** How a field literal is sent (RFC 7541 §6.2). *)
type indexing =
  | Incremental  (** Added to the dynamic table, so a repeat costs a byte. *)
  | Without_indexing  (** Not added, may be added by an intermediary. *)
  | Never_indexed
      (** Not added here nor by any intermediary, and never sent as an index
          (§7.1.3): for values an attacker could guess by watching the size of
          compressed blocks. *)

val default_indexing : string -> string -> indexing
(** [default_indexing name value] is the encoder's policy:
    - [Never_indexed] for [authorization], [proxy-authorization] and
      [set-cookie] (credentials), and [cookie] values shorter than 20 bytes,
      which are guessable (RFC 7541 §7.1.3 suggests it);
    - [Without_indexing] for values that rarely repeat, which would only evict
      useful entries: [:path], [content-length], [content-range],
      [if-modified-since], [if-none-match], [location], [age];
    - [Incremental] otherwise, [etag] and [last-modified] included: a server
      sends the same ones with every response for a resource (a static file),
      where a repeat costs a byte rather than a Huffman coding of 30 (in
      bench/h2/hpack_block, a file's response took 9,195 instructions to encode
      with them unindexed).

    Whatever the policy, a field whose entry would take more than half the table
    is sent without indexing. *)

module Encoder : sig
  type t
  (** The encoding context of one connection (mutable, as {!Decoder.t}). *)

  val create : ?max_table_size:int -> ?limit:int -> ?huffman:bool -> unit -> t
  (** [create ()] is an encoder for a peer whose SETTINGS_HEADER_TABLE_SIZE is
      [max_table_size] (default 4096, the initial value). The table uses at most
      [limit] bytes (default 4096) whatever the peer allows: when [limit] is
      lower, the first block begins with a size update. With [huffman] (the
      default), a non-empty string is Huffman-coded unless that is longer.

      Raises [Invalid_argument] if a size is negative. *)

  val set_max_table_size : t -> int -> unit
  (** [set_max_table_size t n]: the peer's SETTINGS_HEADER_TABLE_SIZE is now
      [n]. The table shrinks at once if needed, and the next block begins with
      the size updates the change needs (§4.2: the smallest size reached, then
      the final one). *)

  val encode :
    ?indexing:(string -> string -> indexing) ->
    t ->
    Buffer.t ->
    (string * string) list ->
    unit
  (** [encode t b fields] appends the field block of [fields], in order,
      choosing each literal's representation with [indexing] (default
      {!default_indexing}). A field found whole in a table is sent as its index,
      unless [Never_indexed]. Names are sent as given: HTTP/2 wants them
      lowercase (RFC 9113 §8.2.1). *)

  val encode_with :
    ?indexing:(string -> string -> indexing) ->
    t ->
    (string * string) list ->
    (bytes -> int -> int -> 'a) ->
    'a
  (** [encode_with t fields k] is [k bytes off len], the block [encode] would
      append being the [len] bytes at [off] in [bytes]: the encoder's own
      buffer, valid until [k] returns (the next block overwrites it), so that
      the caller copies it straight where it goes. *)

  val table_size : t -> int
  val table_entries : t -> (string * string) list
end
