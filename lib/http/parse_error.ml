type t = { status : int; reason : string; close : bool }

let pp ppf { status; reason; close } =
  Format.fprintf ppf "%d %s%s" status reason (if close then " (close)" else "")
