external malloc_trim : unit -> bool = "braid_malloc_trim"

let give_back () =
  Gc.compact ();
  ignore (malloc_trim ())
