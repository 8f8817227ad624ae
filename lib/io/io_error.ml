exception Io_error of { op : string; error : Unix.error; detail : string }

let message = function
  | Io_error { op; error; detail = "" } ->
      Some (Printf.sprintf "%s: %s" op (Unix.error_message error))
  | Io_error { op; error; detail } ->
      Some (Printf.sprintf "%s: %s (%s)" op (Unix.error_message error) detail)
  | _ -> None

let () =
  Printexc.register_printer (fun e ->
      Option.map (fun m -> "Braid_io.Io_error(" ^ m ^ ")") (message e))

let fail op error = raise (Io_error { op; error; detail = "" })
let fail_on op error detail = raise (Io_error { op; error; detail })

let of_unix f =
  try f ()
  with Unix.Unix_error (error, call, arg) ->
    let bt = Printexc.get_raw_backtrace () in
    Printexc.raise_with_backtrace
      (Io_error { op = call; error; detail = arg })
      bt

let with_detail op detail f =
  try f ()
  with Unix.Unix_error (error, _, _) ->
    let bt = Printexc.get_raw_backtrace () in
    Printexc.raise_with_backtrace (Io_error { op; error; detail }) bt
