type t =
  | Connection_error of { code : Error_code.t; reason : string }
  | Stream_error of { stream : int; code : Error_code.t; reason : string }

let code = function
  | Connection_error { code; _ } | Stream_error { code; _ } -> code

let pp ppf = function
  | Connection_error { code; reason } ->
      Format.fprintf ppf "connection error %a: %s" Error_code.pp code reason
  | Stream_error { stream; code; reason } ->
      Format.fprintf ppf "stream %d error %a: %s" stream Error_code.pp code
        reason
