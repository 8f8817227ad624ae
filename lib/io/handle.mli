(** What {!Fd} and {!Net} share: the error exception and ownership of a
    registered descriptor by a switch. Internal. *)

exception Error of { op : string; error : Unix.error }
(** See {!Fd.Error}. *)

val fail : string -> Unix.error -> 'a
(** [fail op error] raises {!Error}. *)

val close : Loop.fd -> unit
(** {!Loop.close}, raising {!Error} [{op = "close"}]. *)

val attach : sw:Braid.Switch.t -> Loop.fd -> unit
(** [attach ~sw fd] makes [sw] close [fd] when it finishes.

    Raises [Invalid_argument] if [sw] has finished; [fd] is then closed. *)

val register :
  sw:Braid.Switch.t ->
  Loop.t ->
  Unix.file_descr ->
  socket:bool ->
  stream:bool ->
  op:string ->
  Loop.fd
(** [register ~sw loop unix ~socket ~op] is {!Loop.register} then {!attach};
    [unix] is closed if either fails. *)

val usable : Loop.fd -> op:string -> unit
(** {!Loop.check_usable}, raising {!Error} [{op; error = EBADF}] if the
    descriptor is closed. *)

val wait : Loop.fd -> write:bool -> op:string -> unit
(** {!Loop.await}, raising {!Error} [{op; error = EBADF}] if the descriptor is
    or gets closed. *)

val wait_checked : Loop.fd -> write:bool -> op:string -> unit
(** {!Loop.await_checked}, raising {!Error} [{op; error = EBADF}] if the
    descriptor gets closed. *)
