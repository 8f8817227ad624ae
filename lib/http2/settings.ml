type setting =
  | Header_table_size of int
  | Enable_push of bool
  | Max_concurrent_streams of int
  | Initial_window_size of int
  | Max_frame_size of int
  | Max_header_list_size of int

type t = {
  header_table_size : int;
  enable_push : bool;
  max_concurrent_streams : int option;
  initial_window_size : int;
  max_frame_size : int;
  max_header_list_size : int option;
}

let default =
  {
    header_table_size = 4096;
    enable_push = true;
    max_concurrent_streams = None;
    initial_window_size = 65535;
    max_frame_size = 16384;
    max_header_list_size = None;
  }

let apply t settings =
  List.fold_left
    (fun t -> function
      | Header_table_size n -> { t with header_table_size = n }
      | Enable_push b -> { t with enable_push = b }
      | Max_concurrent_streams n -> { t with max_concurrent_streams = Some n }
      | Initial_window_size n -> { t with initial_window_size = n }
      | Max_frame_size n -> { t with max_frame_size = n }
      | Max_header_list_size n -> { t with max_header_list_size = Some n })
    t settings

let identifier = function
  | Header_table_size _ -> 0x1
  | Enable_push _ -> 0x2
  | Max_concurrent_streams _ -> 0x3
  | Initial_window_size _ -> 0x4
  | Max_frame_size _ -> 0x5
  | Max_header_list_size _ -> 0x6

let value = function
  | Header_table_size n
  | Max_concurrent_streams n
  | Initial_window_size n
  | Max_frame_size n
  | Max_header_list_size n ->
      n
  | Enable_push b -> Bool.to_int b

let max_window = 0x7fff_ffff

let of_wire identifier value =
  let refuse code reason =
    Error (Violation.Connection_error { code; reason })
  in
  match identifier with
  | 0x1 -> Ok (Some (Header_table_size value))
  | 0x2 -> (
      match value with
      | 0 -> Ok (Some (Enable_push false))
      | 1 -> Ok (Some (Enable_push true))
      | _ -> refuse Protocol_error "SETTINGS_ENABLE_PUSH other than 0 or 1")
  | 0x3 -> Ok (Some (Max_concurrent_streams value))
  | 0x4 ->
      if value > max_window then
        refuse Flow_control_error "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1"
      else Ok (Some (Initial_window_size value))
  | 0x5 ->
      if value < 0x4000 || value > 0xff_ffff then
        refuse Protocol_error "SETTINGS_MAX_FRAME_SIZE out of range"
      else Ok (Some (Max_frame_size value))
  | 0x6 -> Ok (Some (Max_header_list_size value))
  | _ -> Ok None

let pp_setting ppf s =
  let name =
    match s with
    | Header_table_size _ -> "HEADER_TABLE_SIZE"
    | Enable_push _ -> "ENABLE_PUSH"
    | Max_concurrent_streams _ -> "MAX_CONCURRENT_STREAMS"
    | Initial_window_size _ -> "INITIAL_WINDOW_SIZE"
    | Max_frame_size _ -> "MAX_FRAME_SIZE"
    | Max_header_list_size _ -> "MAX_HEADER_LIST_SIZE"
  in
  Format.fprintf ppf "%s=%d" name (value s)
