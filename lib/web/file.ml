type kind = Regular | Directory | Symlink | Other

type info = {
  kind : kind;
  size : int;
  mtime : float;
  ctime : float;
  device : int;
  inode : int;
}

type error = Not_found | Forbidden | Failed of string

type contents =
  | In_memory of string
  | Reader of {
      read : offset:int -> bytes -> int -> int -> int;
      close : unit -> unit;
      file : Unix.file_descr option;
    }

let error_to_string = function
  | Not_found -> "not found"
  | Forbidden -> "forbidden"
  | Failed reason -> reason

(* Typed float comparisons, compiled inline ([Float.equal] is a C call): a
   NaN time, which no file has, would only count as a change. *)
let same_version a b =
  a.inode = b.inode && a.device = b.device && a.size = b.size
  && a.mtime = b.mtime && a.ctime = b.ctime
