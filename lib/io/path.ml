let on_pool op path call =
  Blocking.run (fun () -> File_syscall.with_path op path call)

let stat ?(follow = true) path =
  if follow then on_pool "stat" path (fun () -> Unix.stat path)
  else on_pool "lstat" path (fun () -> Unix.lstat path)

let kind ?(follow = true) path =
  let op, stat =
    if follow then ("stat", Unix.stat) else ("lstat", Unix.lstat)
  in
  on_pool op path (fun () ->
      match stat path with
      | { st_kind; _ } -> Some st_kind
      | exception Unix.Unix_error ((ENOENT | ENOTDIR), _, _) -> None)

let exists ?follow path = Option.is_some (kind ?follow path)

let read_dir dir =
  Blocking.run (fun () ->
      let handle =
        File_syscall.with_path "opendir" dir (fun () -> Unix.opendir dir)
      in
      let rec entries acc =
        match Unix.readdir handle with
        | "." | ".." -> entries acc
        | name -> entries (name :: acc)
        | exception End_of_file -> acc
      in
      Fun.protect
        ~finally:(fun () -> Unix.closedir handle)
        (fun () ->
          File_syscall.with_path "readdir" dir (fun () ->
              List.sort String.compare (entries []))))

let is_directory dir =
  match Unix.stat dir with
  | { st_kind = S_DIR; _ } -> true
  | _ -> false
  | exception Unix.Unix_error _ -> false

let mkdir ?(perm = 0o777) ?(parents = false) dir =
  let rec make dir =
    match Unix.mkdir dir perm with
    | () -> ()
    | exception Unix.Unix_error (EEXIST, _, _) when parents && is_directory dir
      ->
        ()
    | exception Unix.Unix_error (ENOENT, _, _)
      when parents && Filename.dirname dir <> dir ->
        make (Filename.dirname dir);
        (* A concurrent [mkdir -p] may have made it meanwhile: [make] accepts
           an existing directory. *)
        make dir
  in
  on_pool "mkdir" dir (fun () -> make dir)

let rmdir dir = on_pool "rmdir" dir (fun () -> Unix.rmdir dir)
let rename src dst = on_pool "rename" src (fun () -> Unix.rename src dst)
let unlink path = on_pool "unlink" path (fun () -> Unix.unlink path)
let realpath path = on_pool "realpath" path (fun () -> Unix.realpath path)

let symlink ~target link =
  on_pool "symlink" link (fun () -> Unix.symlink target link)

let readlink link = on_pool "readlink" link (fun () -> Unix.readlink link)

let with_fd path flags perm f =
  let fd =
    File_syscall.with_path "open" path (fun () ->
        Unix.openfile path (Unix.O_CLOEXEC :: flags) perm)
  in
  match f fd with
  | result ->
      File_syscall.with_path "close" path (fun () -> Unix.close fd);
      result
  | exception error ->
      let backtrace = Printexc.get_raw_backtrace () in
      (try Unix.close fd
       with Unix.Unix_error _ ->
         (* The first failure is the one to report. *)
         ());
      Printexc.raise_with_backtrace error backtrace

let load path =
  Blocking.run (fun () ->
      with_fd path [ O_RDONLY ] 0 (fun fd ->
          File_syscall.with_path "read" path (fun () ->
              File_syscall.read_to_end fd)))

let save ?(perm = 0o666) ?(append = false) path data =
  let mode = if append then Unix.O_APPEND else O_TRUNC in
  Blocking.run (fun () ->
      with_fd path [ O_WRONLY; O_CREAT; mode ] perm (fun fd ->
          File_syscall.with_path "write" path (fun () ->
              File_syscall.write_all fd data 0 (String.length data) ~at:(-1))))
