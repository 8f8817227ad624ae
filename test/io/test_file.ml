(* Files and paths: round trips, metadata, directories, names and symbolic
   links, errors that name the path, switches that close their files,
   cancellation of every call that can block (a FIFO makes a call block for
   as long as the test wants), and many fibers at once while the loop keeps
   ticking. *)

open Braid_io
open Common

(* A fresh directory under the system's temporary directory, removed with
   everything in it once [f] returns. Set up and torn down with plain Unix
   calls, outside any loop. *)
let with_temp_dir f =
  let rec remove path =
    match Unix.lstat path with
    | { st_kind = S_DIR; _ } ->
        Array.iter
          (fun name -> remove (Filename.concat path name))
          (Sys.readdir path);
        Unix.rmdir path
    | _ -> Unix.unlink path
    | exception Unix.Unix_error (ENOENT, _, _) -> ()
  in
  let dir =
    Filename.concat
      (Filename.get_temp_dir_name ())
      (Printf.sprintf "braid-test-file-%d-%d" (Unix.getpid ())
         (Random.State.bits (Random.State.make_self_init ())))
  in
  Unix.mkdir dir 0o700;
  Fun.protect ~finally:(fun () -> remove dir) (fun () -> f dir)

(* Runs [f dir pool] in a loop, with a pool of its own for every file call,
   and checks that no descriptor is left open once the pool's calls all
   ended. *)
let with_files name f =
  with_temp_dir @@ fun dir ->
  let pool = Blocking.create () in
  let before = open_fds () in
  (* Shut down only after a success: a failed test may have left a call
     blocked on a FIFO, and the shutdown would wait for it forever. *)
  run (fun () ->
      Blocking.with_pool pool (fun () -> within name (fun () -> f dir pool)));
  Blocking.shutdown pool;
  Alcotest.(check int) "no descriptor left open" before (open_fds ())

(* Deterministic bytes that differ from one offset to the next. *)
let pattern n =
  String.init n (fun i -> Char.chr (((i * 7) + (i / 251)) land 0xff))

(* What one read moves at most (File's documentation says 1 MiB). *)
let mib = 1024 * 1024

let unix_error =
  Alcotest.testable
    (fun ppf (error, op, detail) ->
      Fmt.pf ppf "Io_error {op = %S; error = %s; detail = %S}" op
        (Unix.error_message error) detail)
    ( = )

(* How [f ()] fails, as a value to compare. *)
let failure_of f =
  match f () with
  | _ -> Alcotest.fail "no Io_error raised"
  | exception Io_error { op; error; detail } -> (error, op, detail)

let check_fails what expected f =
  Alcotest.check unix_error what expected (failure_of f)

let save_and_load () =
  with_files "save and load" @@ fun dir _ ->
  let file = Filename.concat dir "greeting" in
  Path.save ~perm:0o600 file "hello";
  Alcotest.(check string) "load" "hello" (Path.load file);
  Path.save ~append:true file ", world";
  Alcotest.(check string) "appended" "hello, world" (Path.load file);
  Path.save file "bye";
  Alcotest.(check string) "truncated" "bye" (Path.load file);
  Alcotest.(check int) "permissions" 0o600 ((Path.stat file).st_perm land 0o777);
  Path.save file "";
  Alcotest.(check string) "empty" "" (Path.load file);
  let big = pattern ((3 * mib) + 17) in
  Path.save file big;
  Alcotest.(check bool) "several MiB" true (Path.load file = big)

let offsets () =
  with_files "offsets" @@ fun dir _ ->
  Switch.run @@ fun sw ->
  let path = Filename.concat dir "sparse" in
  let file = File.open_rw ~sw ~create:(`Exclusive 0o644) path in
  File.pwrite_all file (Bytes.of_string "world") 0 5 ~file_offset:10;
  File.pwrite_all file (Bytes.of_string "<hello>") 1 5 ~file_offset:0;
  Alcotest.(check int) "size" 15 (File.size file);
  let buf = Bytes.make 20 '.' in
  Alcotest.(check int) "pread" 5 (File.pread file buf 2 5 ~file_offset:10);
  Alcotest.(check string)
    "at its offset" "..world..."
    (Bytes.sub_string buf 0 10);
  Alcotest.(check int)
    "short near the end" 3
    (File.pread file buf 0 10 ~file_offset:12);
  Alcotest.(check int)
    "end of file" 0
    (File.pread file buf 0 10 ~file_offset:15);
  File.pread_exact file buf 0 15 ~file_offset:0;
  Alcotest.(check string)
    "a hole reads as zeros" "hello\000\000\000\000\000world"
    (Bytes.sub_string buf 0 15);
  Alcotest.check_raises "pread_exact past the end" End_of_file (fun () ->
      File.pread_exact file buf 0 6 ~file_offset:10);
  Alcotest.check_raises "a bad range"
    (Invalid_argument "File.pread: invalid range of the buffer") (fun () ->
      ignore (File.pread file buf 18 5 ~file_offset:0 : int));
  Alcotest.check_raises "a negative offset"
    (Invalid_argument "File.pwrite_all: negative file offset") (fun () ->
      File.pwrite_all file buf 0 1 ~file_offset:(-1));
  (* 20 fibers write and read back their own 4 KiB block of one file at
     once: offsets, not a shared position. *)
  let block = 4096 in
  let fibers =
    List.init 20 (fun i ->
        Fiber.fork ~sw (fun () ->
            let mine = Bytes.make block (Char.chr (Char.code 'a' + i)) in
            File.pwrite_all file mine 0 block ~file_offset:(i * block);
            let back = Bytes.create block in
            File.pread_exact file back 0 block ~file_offset:(i * block);
            Bytes.equal mine back))
  in
  List.iteri
    (fun i f ->
      Alcotest.(check bool) (Printf.sprintf "block %d" i) true (Fiber.join f))
    fibers;
  File.truncate file 5;
  Alcotest.(check int) "truncated" 5 (File.size file);
  File.sync file

(* 5 MiB written in pieces of 300 KiB at the file's position, then read back
   in pieces of 256 KiB and all at once. *)
let streaming () =
  with_files "streaming" @@ fun dir _ ->
  let path = Filename.concat dir "big" in
  let data = pattern (5 * 1024 * 1024) in
  let total = String.length data in
  Switch.run (fun sw ->
      let out = File.open_out ~sw ~create:(`Or_truncate 0o644) path in
      let bytes = Bytes.unsafe_of_string data in
      let piece = 300 * 1024 in
      let rec write off =
        if off < total then (
          let len = min piece (total - off) in
          File.write_all out bytes off len;
          write (off + len))
      in
      write 0;
      File.close out;
      Alcotest.(check bool) "closed" false (File.is_open out));
  Switch.run (fun sw ->
      let input = File.open_in ~sw path in
      let back = Buffer.create total and buf = Bytes.create (256 * 1024) in
      let rec read () =
        match File.read_into input buf 0 (Bytes.length buf) with
        | 0 -> ()
        | n ->
            Buffer.add_subbytes back buf 0 n;
            read ()
      in
      read ();
      Alcotest.(check int) "length read" total (Buffer.length back);
      Alcotest.(check bool) "read in pieces" true (Buffer.contents back = data);
      let again = File.open_in ~sw path in
      let huge = Bytes.create (2 * mib) in
      Alcotest.(check int)
        "one read moves at most 1 MiB" mib
        (File.read_into again huge 0 (Bytes.length huge));
      Alcotest.(check bool)
        "read_all from the position" true
        (File.read_all again = String.sub data mib (total - mib)));
  Switch.run @@ fun sw ->
  let log = File.open_out ~sw ~append:true ~create:`Never path in
  File.write_string log "tail";
  Alcotest.(check int) "appended" (total + 4) (File.size log)

let kinds () =
  with_files "kinds" @@ fun dir _ ->
  let file = Filename.concat dir "file" in
  Path.save file "12345";
  Alcotest.(check int) "size" 5 (Path.stat file).st_size;
  Switch.run (fun sw ->
      let f = File.open_in ~sw file in
      Alcotest.(check bool) "File.stat" true ((File.stat f).st_kind = S_REG);
      Alcotest.(check string) "File.path" file (File.path f));
  let show = function
    | None -> "none"
    | Some Unix.S_REG -> "file"
    | Some S_DIR -> "directory"
    | Some S_LNK -> "link"
    | Some _ -> "other"
  in
  let check what expected path =
    Alcotest.(check string) what expected (show (Path.kind path))
  in
  check "a file" "file" file;
  check "a directory" "directory" dir;
  check "nothing" "none" (Filename.concat dir "missing");
  check "through a file" "none" (Filename.concat file "below");
  Alcotest.(check bool) "exists" true (Path.exists file);
  Alcotest.(check bool)
    "does not exist" false
    (Path.exists (Filename.concat dir "missing"))

let directories () =
  with_files "directories" @@ fun dir _ ->
  let inside name = Filename.concat dir name in
  List.iter (fun name -> Path.save (inside name) name) [ "b"; "a"; "c" ];
  Path.mkdir (inside "d");
  Alcotest.(check (list string))
    "sorted" [ "a"; "b"; "c"; "d" ] (Path.read_dir dir);
  Alcotest.(check (list string)) "empty" [] (Path.read_dir (inside "d"));
  let deep = List.fold_left Filename.concat (inside "p") [ "q"; "r" ] in
  Path.mkdir ~parents:true deep;
  Alcotest.(check bool) "parents made" true (Path.kind deep = Some S_DIR);
  Path.mkdir ~parents:true deep;
  Path.mkdir ~perm:0o700 ~parents:true (deep ^ "/");
  check_fails "exists" (EEXIST, "mkdir", deep) (fun () -> Path.mkdir deep);
  let orphan = List.fold_left Filename.concat (inside "x") [ "y" ] in
  check_fails "no parent" (ENOENT, "mkdir", orphan) (fun () ->
      Path.mkdir orphan);
  check_fails "over a file"
    (EEXIST, "mkdir", inside "a")
    (fun () -> Path.mkdir ~parents:true (inside "a"));
  check_fails "not empty"
    (ENOTEMPTY, "rmdir", inside "p")
    (fun () -> Path.rmdir (inside "p"));
  Path.rmdir deep;
  Alcotest.(check (list string)) "removed" [] (Path.read_dir (inside "p/q"));
  check_fails "read a missing directory"
    (ENOENT, "opendir", inside "missing")
    (fun () -> Path.read_dir (inside "missing"))

let names () =
  with_files "rename and unlink" @@ fun dir _ ->
  let old = Filename.concat dir "old" and fresh = Filename.concat dir "new" in
  Path.save old "contents";
  Path.save fresh "replaced";
  Path.rename old fresh;
  Alcotest.(check bool) "old name gone" false (Path.exists old);
  Alcotest.(check string) "new name" "contents" (Path.load fresh);
  check_fails "rename a missing file" (ENOENT, "rename", old) (fun () ->
      Path.rename old fresh);
  Path.unlink fresh;
  Alcotest.(check (list string)) "empty" [] (Path.read_dir dir);
  check_fails "unlink a missing file" (ENOENT, "unlink", fresh) (fun () ->
      Path.unlink fresh)

let symlinks () =
  with_files "symbolic links" @@ fun dir _ ->
  let inside name = Filename.concat dir name in
  Path.save (inside "target") "pointed at";
  Path.symlink ~target:"target" (inside "link");
  Alcotest.(check string) "readlink" "target" (Path.readlink (inside "link"));
  Alcotest.(check string)
    "realpath through the link"
    (Path.realpath (inside "target"))
    (Path.realpath (inside "link"));
  Path.mkdir (inside "sub");
  Alcotest.(check string)
    "realpath resolves .."
    (Path.realpath (inside "target"))
    (Path.realpath (inside "sub/../link"));
  Alcotest.(check string)
    "load through the link" "pointed at"
    (Path.load (inside "link"));
  Alcotest.(check bool)
    "stat follows" true
    ((Path.stat (inside "link")).st_kind = S_REG);
  Alcotest.(check bool)
    "lstat does not" true
    ((Path.stat ~follow:false (inside "link")).st_kind = S_LNK);
  Path.symlink ~target:"nowhere" (inside "dangling");
  Alcotest.(check bool)
    "dangling, followed" true
    (Path.kind (inside "dangling") = None);
  Alcotest.(check bool)
    "dangling, not followed" true
    (Path.kind ~follow:false (inside "dangling") = Some S_LNK);
  check_fails "realpath of a dangling link"
    (ENOENT, "realpath", inside "dangling")
    (fun () -> Path.realpath (inside "dangling"));
  check_fails "readlink of a file"
    (EINVAL, "readlink", inside "target")
    (fun () -> Path.readlink (inside "target"));
  check_fails "symlink over a name"
    (EEXIST, "symlink", inside "link")
    (fun () -> Path.symlink ~target:"x" (inside "link"));
  Path.unlink (inside "link");
  Alcotest.(check bool)
    "unlink removes the link only" true
    (Path.exists (inside "target"))

let errors () =
  with_files "errors" @@ fun dir _ ->
  let missing = Filename.concat dir "missing"
  and file = Filename.concat dir "file" in
  Path.save file "x";
  Switch.run @@ fun sw ->
  check_fails "open a missing file" (ENOENT, "open", missing) (fun () ->
      File.open_in ~sw missing);
  check_fails "never create" (ENOENT, "open", missing) (fun () ->
      File.open_out ~sw ~create:`Never missing);
  check_fails "exclusive create" (EEXIST, "open", file) (fun () ->
      File.open_out ~sw ~create:(`Exclusive 0o600) file);
  check_fails "load" (ENOENT, "open", missing) (fun () -> Path.load missing);
  check_fails "stat" (ENOENT, "stat", missing) (fun () -> Path.stat missing);
  check_fails "lstat" (ENOENT, "lstat", missing) (fun () ->
      Path.stat ~follow:false missing);
  check_fails "open a directory for writing" (EISDIR, "open", dir) (fun () ->
      File.open_out ~sw ~create:`Never dir);
  let reader = File.open_in ~sw file in
  check_fails "write to a read-only file" (EBADF, "write", file) (fun () ->
      File.write_string reader "y");
  File.close reader;
  File.close reader;
  Alcotest.(check bool) "closed" false (File.is_open reader);
  check_fails "use a closed file" (EBADF, "pread", file) (fun () ->
      File.pread reader (Bytes.create 1) 0 1 ~file_offset:0);
  check_fails "stat a closed file" (EBADF, "fstat", file) (fun () ->
      File.stat reader);
  (* The message the convention promises, the path in parentheses. *)
  Alcotest.(check (option string))
    "error_message"
    (Some ("open: No such file or directory (" ^ missing ^ ")"))
    (match Path.load missing with
    | _ -> None
    | exception e -> Braid_io.error_message e);
  Alcotest.(check (option string))
    "not an Io_error" None
    (Braid_io.error_message Not_found)

(* Files opened under a switch are closed when it finishes, also when it
   fails; a switch that has finished takes no more files. *)
let switch_closes () =
  with_files "the switch closes its files" @@ fun dir _ ->
  let file = Filename.concat dir "file" in
  Path.save file "x";
  let before = open_fds () in
  let files =
    Switch.run (fun sw -> List.init 20 (fun _ -> File.open_in ~sw file))
  in
  Alcotest.(check int) "descriptors after the switch" before (open_fds ());
  Alcotest.(check bool)
    "none open" true
    (List.for_all (fun f -> not (File.is_open f)) files);
  (match
     Switch.run (fun sw ->
         ignore (File.open_in ~sw file : File.t);
         failwith "boom")
   with
  | () -> Alcotest.fail "the switch did not fail"
  | exception Failure _ -> ());
  Alcotest.(check int) "after a failure" before (open_fds ());
  let finished = Switch.run Fun.id in
  Alcotest.check_raises "a finished switch"
    (Invalid_argument "Braid.Switch.on_release: the switch has finished")
    (fun () -> ignore (File.open_in ~sw:finished file : File.t));
  Alcotest.(check int) "after refusing" before (open_fds ())

let busy pool = (Blocking.stats pool).busy

(* Forks [call], waits until its pool thread is blocked in it, cancels the
   fiber, and checks that it was woken at once. *)
let cancel_blocked ~sw pool what call =
  (* A thread counts as busy a little after its result was delivered. *)
  eventually (what ^ ": no call before") (fun () -> busy pool = 0);
  let fiber =
    Fiber.fork ~sw (fun () ->
        match call () with
        | _ -> "returned"
        | exception Braid.Cancelled -> "cancelled")
  in
  eventually (what ^ " starts") (fun () -> busy pool = 1);
  Fiber.cancel fiber;
  Alcotest.(check string)
    (what ^ ": woken at once") "cancelled" (Fiber.join fiber)

(* Opens both ends of the FIFO [path] with plain descriptors, on the pool
   (each open waits for the other end). *)
let open_fifo_end path flags =
  Blocking.run (fun () -> Unix.openfile path (Unix.O_CLOEXEC :: flags) 0)

(* An open of a FIFO waits for its other end: cancelled, the open finishes
   when the other end comes, and the descriptor it got is closed. Likewise
   for loading and saving a FIFO. *)
let cancel_opens () =
  with_files "cancel opens" @@ fun dir pool ->
  let fifo = Filename.concat dir "fifo" in
  Unix.mkfifo fifo 0o600;
  let before = open_fds () in
  Switch.run @@ fun sw ->
  (* The other end comes once the call is cancelled. A late load reads until
     the writer closes, so its writer closes at once; a late save's writes
     need a reader, so its reader stays until the save ends. *)
  let late_end ~keep_other flags what call =
    cancel_blocked ~sw pool what call;
    let other = open_fifo_end fifo flags in
    if not keep_other then Unix.close other;
    let others = if keep_other then 1 else 0 in
    eventually (what ^ ": the late descriptor closed") (fun () ->
        busy pool = 0 && open_fds () = before + others);
    if keep_other then Unix.close other;
    Alcotest.(check int) (what ^ ": no leak") before (open_fds ())
  in
  late_end ~keep_other:true [ O_WRONLY ] "File.open_in" (fun () ->
      File.open_in ~sw fifo);
  late_end ~keep_other:true [ O_RDONLY ] "File.open_out" (fun () ->
      File.open_out ~sw ~create:`Never fifo);
  late_end ~keep_other:false [ O_WRONLY ] "Path.load" (fun () -> Path.load fifo);
  late_end ~keep_other:true [ O_RDONLY ] "Path.save" (fun () ->
      Path.save fifo "data")

(* Reads of an empty FIFO and writes to a full one block their pool thread
   until the test feeds or drains it. A cancelled read never writes into the
   caller's buffer; a file closed while a cancelled call still runs on it
   keeps its descriptor until the call ends. *)
let cancel_reads_and_writes () =
  with_files "cancel reads and writes" @@ fun dir pool ->
  let fifo = Filename.concat dir "fifo" in
  Unix.mkfifo fifo 0o600;
  let before = open_fds () in
  Switch.run @@ fun sw ->
  let reader = Fiber.fork ~sw (fun () -> File.open_in ~sw fifo) in
  let writer = open_fifo_end fifo [ O_WRONLY ] in
  let reader = Fiber.join reader in
  let buf = Bytes.make 4 '.' in
  cancel_blocked ~sw pool "File.read_into" (fun () ->
      File.read_into reader buf 0 4);
  ignore (Unix.write_substring writer "late" 0 4 : int);
  eventually "the late read ends" (fun () -> busy pool = 0);
  Alcotest.(check string)
    "the caller's buffer untouched" "...." (Bytes.to_string buf);
  cancel_blocked ~sw pool "File.read_all" (fun () -> File.read_all reader);
  File.close reader;
  Alcotest.(check bool) "closed for its users" false (File.is_open reader);
  Alcotest.(check int)
    "the descriptor stays while a call runs on it" (before + 2) (open_fds ());
  Unix.close writer;
  eventually "the late read_all ends and closes the descriptor" (fun () ->
      busy pool = 0 && open_fds () = before);
  (* A write of 1 MiB fills the FIFO (64 KiB) and blocks until drained. *)
  let reader_fd = Fiber.fork ~sw (fun () -> open_fifo_end fifo [ O_RDONLY ]) in
  let out = File.open_out ~sw ~create:`Never fifo in
  let reader_fd = Fiber.join reader_fd in
  let data = pattern (1024 * 1024) in
  cancel_blocked ~sw pool "File.write_string" (fun () ->
      File.write_string out data);
  File.close out;
  let drained =
    Blocking.run (fun () ->
        let buf = Bytes.create 65536 in
        let rec drain total =
          match Unix.read reader_fd buf 0 65536 with
          | 0 -> total
          | n -> drain (total + n)
        in
        drain 0)
  in
  Alcotest.(check int)
    "the cancelled write completed" (String.length data) drained;
  Unix.close reader_fd;
  eventually "all closed" (fun () -> busy pool = 0 && open_fds () = before)

(* 200 fibers read 200 files at once (half through File, half through
   Path.load) while a ticker fiber ticks every 2 ms, and one more loads a
   FIFO whose writer, a plain systhread, comes only after 1.5 s: the loop
   never waits for a file call. The stall bound (1 s) is generous for a
   loaded 2-core machine (gaps of 260 ms were seen under a parallel
   [make test]) and below the 1.5 s a load on the loop's thread would
   stall it. *)
let many_readers () =
  with_files "many readers" @@ fun dir _ ->
  let size = 64 * 1024 in
  let path i = Filename.concat dir (Printf.sprintf "file-%03d" i) in
  let contents i = String.make size (Char.chr (i land 0xff)) in
  List.iter (fun i -> Path.save (path i) (contents i)) (List.init 200 Fun.id);
  let fifo = Filename.concat dir "slow" in
  Unix.mkfifo fifo 0o600;
  let correct, longest =
    with_ticker @@ fun () ->
    Switch.run @@ fun sw ->
    let slow = Fiber.fork ~sw (fun () -> Path.load fifo) in
    let feeder =
      Thread.create
        (fun () ->
          Thread.delay 1.5;
          let fd = Unix.openfile fifo [ O_WRONLY; O_CLOEXEC ] 0 in
          ignore (Unix.write_substring fd "slow" 0 4 : int);
          Unix.close fd)
        ()
    in
    let readers =
      List.init 200 (fun i ->
          Fiber.fork ~sw (fun () ->
              let got =
                if i mod 2 = 0 then Path.load (path i)
                else
                  Switch.run (fun sw ->
                      let f = File.open_in ~sw (path i) in
                      let buf = Bytes.create size in
                      File.pread_exact f buf 0 size ~file_offset:0;
                      Bytes.to_string buf)
              in
              got = contents i))
    in
    let correct = List.filter Fiber.join readers in
    Alcotest.(check string) "the slow load" "slow" (Fiber.join slow);
    Thread.join feeder;
    correct
  in
  Alcotest.(check int) "every file read" 200 (List.length correct);
  Alcotest.(check (list string))
    "every name listed"
    (List.init 200 (fun i -> Filename.basename (path i)) @ [ "slow" ])
    (Path.read_dir dir);
  check_no_stall ~bound_ms:1000 longest

(* From a bare thread (no scheduler), the calls block it and work. *)
let outside_a_loop () =
  with_temp_dir @@ fun dir ->
  let file = Filename.concat dir "file" in
  Path.save file "plain";
  Alcotest.(check string) "load" "plain" (Path.load file);
  Switch.run @@ fun sw ->
  let f = File.open_in ~sw file in
  Alcotest.(check string) "read_all" "plain" (File.read_all f)

let () =
  Alcotest.run "file"
    [
      ( "files",
        [
          Alcotest.test_case "save and load" `Quick save_and_load;
          Alcotest.test_case "pread and pwrite at offsets" `Quick offsets;
          Alcotest.test_case "streaming 5 MiB" `Quick streaming;
          Alcotest.test_case "errors name the path" `Quick errors;
          Alcotest.test_case "the switch closes its files" `Quick switch_closes;
          Alcotest.test_case "outside a loop" `Quick outside_a_loop;
        ] );
      ( "paths",
        [
          Alcotest.test_case "stat and kinds" `Quick kinds;
          Alcotest.test_case "directories" `Quick directories;
          Alcotest.test_case "rename and unlink" `Quick names;
          Alcotest.test_case "symbolic links" `Quick symlinks;
        ] );
      ( "blocking",
        [
          Alcotest.test_case "cancel opens" `Quick cancel_opens;
          Alcotest.test_case "cancel reads and writes" `Quick
            cancel_reads_and_writes;
          Alcotest.test_case "many readers, the loop keeps running" `Quick
            many_readers;
        ] );
    ]
