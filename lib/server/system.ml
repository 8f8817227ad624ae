external malloc_trim : unit -> bool = "braid_malloc_trim"
external descriptor_limits : unit -> int * int = "braid_nofile_limits"
external set_descriptor_limit : int -> unit = "braid_set_nofile_soft"

let give_back_memory () =
  Gc.compact ();
  ignore (malloc_trim ())
