external fd : int -> Unix.file_descr = "braid_inherited_fd"
