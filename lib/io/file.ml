(* The descriptor is shared between the fibers that use the file and the pool
   threads that run their calls: [users] counts the calls running on it, and
   the last one closes it if [close] came meanwhile, so that a descriptor
   number is never reused under a running call. *)
type t = {
  fd : Unix.file_descr;
  path : string;
  lock : Mutex.t;  (** Guards [users] and [closing]; never held in a call. *)
  mutable users : int;
  mutable closing : bool;
  position : Mutex.t;
      (** Held by the pool thread of a call that streams at the file's position,
          so that such calls never interleave. *)
  mutable switch_release : Braid.Switch.hook option;
      (** Taken back from the switch by an earlier {!close}. *)
  mutable spare_bounces : File_syscall.bounce list;
      (** Guarded by [lock]: read buffers to use again, at most
          [max_spare_bytes] in all. *)
}

(* Enough for the reads several fibers make at once in chunks of 256 KiB
   (eight), or two of the largest (1 MiB): a buffer more is allocated and
   dropped for each read, which costs page faults and munmaps. *)
let max_spare_bytes = 2 * 1024 * 1024

(* A read buffer of at least [size] bytes: a spare one if it fits, so that
   a stream of reads does not allocate (and page-fault) a buffer each. *)
let take_bounce t size =
  let spare =
    Mutex.protect t.lock (fun () ->
        match t.spare_bounces with
        | b :: rest when Bigarray.Array1.dim b >= size ->
            t.spare_bounces <- rest;
            Some b
        | _ -> None)
  in
  match spare with
  | Some b -> b
  | None -> File_syscall.create_bounce (max size 65536)

let give_back_bounce t b =
  Mutex.protect t.lock (fun () ->
      let kept =
        List.fold_left
          (fun n spare -> n + Bigarray.Array1.dim spare)
          0 t.spare_bounces
      in
      if kept + Bigarray.Array1.dim b <= max_spare_bytes then
        t.spare_bounces <- b :: t.spare_bounces)

type create =
  [ `Never | `If_missing of int | `Or_truncate of int | `Exclusive of int ]

let path t = t.path
let is_open t = Mutex.protect t.lock (fun () -> not t.closing)
let closed t op = Io_error.Io_error { op; error = EBADF; detail = t.path }

(* [close(2)] on a pool thread, for a close that nobody waits for. *)
let close_unwatched fd =
  try Unix.close fd
  with Unix.Unix_error _ ->
    (* See [close] in the interface: no one to report to. *)
    ()

(* Runs [call t.fd] on the calling fiber's pool, the descriptor held open
   meanwhile. The hold is taken on the pool thread: a call dropped before it
   starts (its fiber was cancelled) holds nothing. *)
let on_pool t op call =
  if not (is_open t) then raise (closed t op);
  Blocking.run (fun () ->
      Mutex.protect t.lock (fun () ->
          if t.closing then raise (closed t op);
          t.users <- t.users + 1);
      let release () =
        let last =
          Mutex.protect t.lock (fun () ->
              t.users <- t.users - 1;
              t.closing && t.users = 0)
        in
        if last then close_unwatched t.fd
      in
      Fun.protect ~finally:release (fun () ->
          File_syscall.with_path op t.path (fun () -> call t.fd)))

let close t =
  let now, release =
    Mutex.protect t.lock (fun () ->
        if t.closing then (false, None)
        else (
          t.closing <- true;
          let release = t.switch_release in
          t.switch_release <- None;
          (t.users = 0, release)))
  in
  Option.iter Braid.Switch.remove_release release;
  if now then
    Braid.Fiber.protect (fun () ->
        Blocking.run (fun () ->
            File_syscall.with_path "close" t.path (fun () -> Unix.close t.fd)))

let open_with_flags ~sw ?(perm = 0o666) flags path =
  let fd =
    Blocking.run ~dispose:close_unwatched (fun () ->
        File_syscall.with_path "open" path (fun () ->
            Unix.openfile path (Unix.O_CLOEXEC :: flags) perm))
  in
  let t =
    {
      fd;
      path;
      lock = Mutex.create ();
      users = 0;
      closing = false;
      position = Mutex.create ();
      switch_release = None;
      spare_bounces = [];
    }
  in
  match Braid.Switch.on_release_removable sw (fun () -> close t) with
  | hook ->
      Mutex.protect t.lock (fun () -> t.switch_release <- Some hook);
      t
  | exception (Invalid_argument _ as finished) ->
      close t;
      raise finished

let creation : create -> Unix.open_flag list * int = function
  | `Never -> ([], 0)
  | `If_missing perm -> ([ O_CREAT ], perm)
  | `Or_truncate perm -> ([ O_CREAT; O_TRUNC ], perm)
  | `Exclusive perm -> ([ O_CREAT; O_EXCL ], perm)

let open_in ~sw path = open_with_flags ~sw [ O_RDONLY ] path

let open_out ~sw ?(append = false) ~create path =
  let flags, perm = creation create in
  let flags = if append then Unix.O_APPEND :: flags else flags in
  open_with_flags ~sw ~perm (O_WRONLY :: flags) path

let open_rw ~sw ~create path =
  let flags, perm = creation create in
  open_with_flags ~sw ~perm (O_RDWR :: flags) path

let check_range fn buf off len =
  if off < 0 || len < 0 || off > Bytes.length buf - len then
    invalid_arg (Printf.sprintf "File.%s: invalid range of the buffer" fn)

let check_offset fn file_offset =
  if file_offset < 0 then
    invalid_arg (Printf.sprintf "File.%s: negative file offset" fn)

(* Reads into a buffer owned by the call (outside the OCaml heap, so the
   system call needs no bounce of its own), which the caller copies from once
   it has the result: a cancelled call writes only into its own buffer, which
   goes back to the file's spares either way. *)
let read_on_pool t op buf off len ~at =
  if len = 0 then 0
  else
    let wanted = min len File_syscall.chunk in
    let bounce = take_bounce t wanted in
    match
      on_pool t op (fun fd ->
          if at < 0 then
            Mutex.protect t.position (fun () ->
                File_syscall.read_bounce fd bounce wanted ~at)
          else File_syscall.read_bounce fd bounce wanted ~at)
    with
    | n ->
        File_syscall.blit_bounce bounce buf off n;
        give_back_bounce t bounce;
        n
    | exception Braid.Cancelled ->
        (* The call may still be reading into [bounce]: not a spare. *)
        raise Braid.Cancelled
    | exception e ->
        give_back_bounce t bounce;
        raise e

let pread t buf off len ~file_offset =
  check_range "pread" buf off len;
  check_offset "pread" file_offset;
  read_on_pool t "pread" buf off len ~at:file_offset

let pread_exact t buf off len ~file_offset =
  check_range "pread_exact" buf off len;
  check_offset "pread_exact" file_offset;
  let rec from filled =
    if filled < len then
      match
        read_on_pool t "pread" buf (off + filled) (len - filled)
          ~at:(file_offset + filled)
      with
      | 0 -> raise End_of_file
      | n -> from (filled + n)
  in
  from 0

let pwrite_all t buf off len ~file_offset =
  check_range "pwrite_all" buf off len;
  check_offset "pwrite_all" file_offset;
  if len > 0 then
    let data = Bytes.sub_string buf off len in
    on_pool t "pwrite" (fun fd ->
        File_syscall.write_all fd data 0 len ~at:file_offset)

let read_into t buf off len =
  check_range "read_into" buf off len;
  read_on_pool t "read" buf off len ~at:(-1)

let read_all t =
  on_pool t "read" (fun fd ->
      Mutex.protect t.position (fun () -> File_syscall.read_to_end fd))

let write_string t data =
  if data <> "" then
    on_pool t "write" (fun fd ->
        Mutex.protect t.position (fun () ->
            File_syscall.write_all fd data 0 (String.length data) ~at:(-1)))

let write_all t buf off len =
  check_range "write_all" buf off len;
  write_string t (Bytes.sub_string buf off len)

let stat t = on_pool t "fstat" Unix.fstat
let size t = (stat t).st_size
let truncate t size = on_pool t "ftruncate" (fun fd -> Unix.ftruncate fd size)
let sync t = on_pool t "fsync" Unix.fsync
