let int_event_bits = 32

let[@inline] fits n =
  (n lsl (Sys.int_size - int_event_bits)) asr (Sys.int_size - int_event_bits)
  = n

(* response: status (10 bits) | bytes (21 bits) *)
let status_bits = 10
let bytes_bits = 21

let[@inline] fits_response ~status ~bytes =
  status lsr status_bits = 0 && bytes lsr bytes_bits = 0

let[@inline] response ~status ~bytes = (status lsl bytes_bits) lor bytes

let response_status packed =
  (packed lsr bytes_bits) land ((1 lsl status_bits) - 1)

let response_bytes packed = packed land ((1 lsl bytes_bits) - 1)
