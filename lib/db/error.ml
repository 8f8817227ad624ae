type t =
  | Connect_failed of string
  | Connection_lost of string
  | Sql of { code : string; message : string }
  | Wait_timeout of float
  | Pool_closed

let to_string = function
  | Connect_failed m -> "could not connect: " ^ m
  | Connection_lost m -> "connection lost: " ^ m
  | Sql { code; message } -> Printf.sprintf "SQL error %s: %s" code message
  | Wait_timeout s ->
      Printf.sprintf "no connection free within %gs (pool exhausted)" s
  | Pool_closed -> "the pool is closed"

let pp ppf e = Format.pp_print_string ppf (to_string e)
