external of_bytes : bytes -> int -> int64 = "%caml_bytes_get64u"
external of_string : string -> int -> int64 = "%caml_string_get64u"

let ones = 0x0101010101010101L
let highs = 0x8080808080808080L
let lows = 0x7f7f7f7f7f7f7f7fL
let[@inline] repeat c = Int64.mul ones (Int64.of_int (Char.code c))

let[@inline] below word n =
  Int64.logand (Int64.logand (Int64.sub word n) (Int64.lognot word)) highs

let[@inline] zeros word = below word ones

(* [(y land 0x7f) + 0x7f] has its high bit set unless the low seven bits
   of the byte are zero: no carry leaves a byte. *)
let[@inline] equal word pattern =
  let y = Int64.logxor word pattern in
  Int64.logand
    (Int64.lognot (Int64.logor (Int64.add (Int64.logand y lows) lows) y))
    highs

let[@inline] from_7f word =
  Int64.logand
    (Int64.logor (Int64.add (Int64.logand word lows) ones) word)
    highs

(* [b < 0x80] is in [[lo, hi]] when [b + 0x80 - lo] has its high bit set and
   [b + 0x7f - hi] has not; these sums stay within the byte. *)
let from c = repeat (Char.unsafe_chr (0x80 - Char.code c))
let past c = repeat (Char.unsafe_chr (0x7f - Char.code c))

let[@inline] within word from past =
  Int64.logand (Int64.add word from) (Int64.lognot (Int64.add word past))

let from_a = from 'a'
let past_z = past 'z'
let from_upper_a = from 'A'
let past_upper_z = past 'Z'
let from_0 = from '0'
let past_9 = past '9'
let[@inline] lowercase word = within word from_a past_z
let[@inline] uppercase word = within word from_upper_a past_upper_z
let[@inline] digits word = within word from_0 past_9

(* The lowest set bit, 8k + 7, shifted down to 2^8k, times these bytes
   (7, 6, ..., 0 from the low end) leaves k in the top byte. *)
let byte_places = 0x0001020304050607L

let[@inline] first mask =
  let lowest = Int64.logand mask (Int64.neg mask) in
  Int64.to_int
    (Int64.shift_right_logical
       (Int64.mul (Int64.shift_right_logical lowest 7) byte_places)
       56)
