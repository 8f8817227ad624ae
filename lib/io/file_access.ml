type cached_open = Path_itself | Path_followed | For_reading

external open_cached : string -> int -> Unix.file_descr = "braid_open_cached"

let open_if_cached path how =
  open_cached path
    (match how with Path_itself -> 0 | Path_followed -> 1 | For_reading -> 2)

external open_regular_for_reading : string -> Unix.file_descr
  = "braid_open_regular_for_reading"

external free_bytes : string -> int = "braid_free_bytes"
