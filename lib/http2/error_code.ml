type t =
  | No_error
  | Protocol_error
  | Internal_error
  | Flow_control_error
  | Settings_timeout
  | Stream_closed
  | Frame_size_error
  | Refused_stream
  | Cancel
  | Compression_error
  | Connect_error
  | Enhance_your_calm
  | Inadequate_security
  | Http_1_1_required
  | Unknown of int

let to_int = function
  | No_error -> 0x0
  | Protocol_error -> 0x1
  | Internal_error -> 0x2
  | Flow_control_error -> 0x3
  | Settings_timeout -> 0x4
  | Stream_closed -> 0x5
  | Frame_size_error -> 0x6
  | Refused_stream -> 0x7
  | Cancel -> 0x8
  | Compression_error -> 0x9
  | Connect_error -> 0xa
  | Enhance_your_calm -> 0xb
  | Inadequate_security -> 0xc
  | Http_1_1_required -> 0xd
  | Unknown n -> n

let of_int = function
  | 0x0 -> No_error
  | 0x1 -> Protocol_error
  | 0x2 -> Internal_error
  | 0x3 -> Flow_control_error
  | 0x4 -> Settings_timeout
  | 0x5 -> Stream_closed
  | 0x6 -> Frame_size_error
  | 0x7 -> Refused_stream
  | 0x8 -> Cancel
  | 0x9 -> Compression_error
  | 0xa -> Connect_error
  | 0xb -> Enhance_your_calm
  | 0xc -> Inadequate_security
  | 0xd -> Http_1_1_required
  | n -> Unknown n

let to_string = function
  | No_error -> "NO_ERROR"
  | Protocol_error -> "PROTOCOL_ERROR"
  | Internal_error -> "INTERNAL_ERROR"
  | Flow_control_error -> "FLOW_CONTROL_ERROR"
  | Settings_timeout -> "SETTINGS_TIMEOUT"
  | Stream_closed -> "STREAM_CLOSED"
  | Frame_size_error -> "FRAME_SIZE_ERROR"
  | Refused_stream -> "REFUSED_STREAM"
  | Cancel -> "CANCEL"
  | Compression_error -> "COMPRESSION_ERROR"
  | Connect_error -> "CONNECT_ERROR"
  | Enhance_your_calm -> "ENHANCE_YOUR_CALM"
  | Inadequate_security -> "INADEQUATE_SECURITY"
  | Http_1_1_required -> "HTTP_1_1_REQUIRED"
  | Unknown n -> Printf.sprintf "0x%x" n

let pp ppf code = Format.pp_print_string ppf (to_string code)
