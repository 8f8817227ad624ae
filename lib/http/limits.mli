(** Bounds on what a peer may send, so hostile input costs bounded memory.

    Every limit is checked at the same byte whatever the input's chunking, so a
    request gets the same answer whether it arrives whole or one byte at a time.
*)

type t = {
  max_request_line : int;
      (** Longest request line, without its CRLF (default 8 KiB). Longer: 414.
          Also bounds the blank lines tolerated before a request line. *)
  max_header_bytes : int;
      (** Longest header section, counting every field line with its line ending
          and the final empty line (default 64 KiB). Longer: 431. Trailer
          sections of chunked bodies get the same bound. *)
  max_header_fields : int;
      (** Most header fields (default 100). More: 431. Same for trailers. *)
  max_body : int;
      (** Largest body in bytes, after chunked decoding (default 1 MiB). Larger:
          413. *)
  max_chunk_line : int;
      (** Longest chunk-size line of a chunked body, extensions included
          (default 4 KiB). Longer: 400. *)
}

val default : t
(** 8 KiB request line, 64 KiB and 100 header fields, 1 MiB body, 4 KiB chunk
    lines. Adjust with [{ Limits.default with max_body = ... }]. *)

val body_too_large : ?source:string -> t -> string
(** [body_too_large t] is the reason of a [413] for a body above [t.max_body]:
    ["body too large: limit 1048576 bytes"], so the client learns the limit.
    [source] says who set it, in parentheses after the limit:
    ["body too large: limit 1048576 bytes (the route's max_body)"]. *)
