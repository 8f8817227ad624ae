(** HTTP/2 without I/O (RFC 9113): the frame codec and HPACK header compression
    (RFC 7541), with the limits and error codes a server needs against hostile
    peers. Pure: any domain, never blocks. *)

(** {1 Errors} *)

module Error_code = Error_code
module Violation = Violation

(** {1 Header compression} *)

module Huffman = Huffman
module Hpack = Hpack

(** {1 Frames} *)

module Settings = Settings
module Frame = Frame
