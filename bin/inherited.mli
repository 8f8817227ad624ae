(** Descriptors passed by the parent process (systemd's socket activation, a
    predecessor that handed its sockets over, {!Handover}). *)

val fd : int -> Unix.file_descr
(** [fd n] is the descriptor number [n], open in this process since it started
    (passed by the parent). Raises [Unix.Unix_error (EBADF, _, _)] if [n] is not
    open. *)
