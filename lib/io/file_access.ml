type cached_open = Path_itself | Path_followed | For_reading

(* The stubs raise Unix_error (call, path); Io_error.of_unix makes that the
   braid.io convention: {op = call; error; detail = path}. *)
external open_cached : string -> int -> Unix.file_descr = "braid_open_cached"

let open_if_cached path how =
  Io_error.of_unix (fun () ->
      open_cached path
        (match how with
        | Path_itself -> 0
        | Path_followed -> 1
        | For_reading -> 2))

external open_regular : string -> Unix.file_descr
  = "braid_open_regular_for_reading"

let open_regular_for_reading path =
  Io_error.of_unix (fun () -> open_regular path)

external free_bytes_stub : string -> int = "braid_free_bytes"

let free_bytes path = Io_error.of_unix (fun () -> free_bytes_stub path)
