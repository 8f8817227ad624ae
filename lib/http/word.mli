(** Eight bytes at a time: the bit tricks the scanners share (head, paths,
    hosts). A word is an [int64] read little-endian where the machine is
    (scanners check {!Sys.big_endian} before using {!first}). A mask has the
    high bit of each flagged byte set. Internal to [Braid_http]. *)

external of_bytes : bytes -> int -> int64 = "%caml_bytes_get64u"
(** The eight bytes at an offset, unchecked: the caller checks the bounds. *)

external of_string : string -> int -> int64 = "%caml_string_get64u"

val ones : int64
(** [0x0101...01]. *)

val highs : int64
(** [0x8080...80]: the high bit of every byte. *)

val lows : int64
(** [0x7f7f...7f]. *)

val repeat : char -> int64
(** [repeat c] is [c] in every byte. *)

val below : int64 -> int64 -> int64
(** [below word (repeat c)], for [c <= '\x80']: flags the bytes below [c]. The
    first one flagged is exact; a borrow may flag bytes after it. *)

val zeros : int64 -> int64
(** [zeros word] = [below word ones]: the zero bytes, the first exactly. *)

val equal : int64 -> int64 -> int64
(** [equal word (repeat c)] flags exactly the bytes equal to [c] (no borrow). *)

val from_7f : int64 -> int64
(** Flags exactly the bytes from [0x7f] up. *)

val from : char -> int64
(** [from lo], for {!within}. *)

val past : char -> int64
(** [past hi], for {!within}. *)

val within : int64 -> int64 -> int64 -> int64
(** [within word (from lo) (past hi)]: exactly the bytes below [0x80] in
    [[lo, hi]]; a byte from [0x80] up may carry into the bytes after it. Only
    the high bits are meaningful: a caller ORs several ranges, then keeps
    [highs] once. The bounds are made once, outside the loops. *)

val lowercase : int64 -> int64
(** [lowercase word] = [within word (from 'a') (past 'z')] (high bits only). *)

val uppercase : int64 -> int64
(** [uppercase word] = [within word (from 'A') (past 'Z')] (high bits only). *)

val digits : int64 -> int64
(** [digits word] = [within word (from '0') (past '9')] (high bits only). *)

val first : int64 -> int
(** [first mask], for a non-zero mask: the place in its word (0 to 7) of the
    first byte it flags (the lowest set bit, by a multiplication). *)
