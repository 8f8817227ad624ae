module Peers = Bench_server.Peers

let fortunes =
  [
    (1, "fortune: No such file or directory");
    (2, "A computer scientist is someone who fixes things that aren't broken.");
    (3, "After enough decimal places, nobody gives a damn.");
    (4, "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1");
    ( 5,
      "A computer program does what you tell it to do, not what you want it to \
       do." );
    ( 6,
      "Emacs is a nice operating system, but I prefer UNIX. \u{2014} Tom \
       Christaensen" );
    (7, "Any program that runs right is obsolete.");
    (8, "A list is only as strong as its weakest link. \u{2014} Donald Knuth");
    (9, "Feature: A bug with seniority.");
    (10, "Computers make very fast, very accurate mistakes.");
    ( 11,
      "<script>alert(\"This should not be displayed in a browser alert \
       box.\");</script>" );
    ( 12,
      "\u{30d5}\u{30ec}\u{30fc}\u{30e0}\u{30ef}\u{30fc}\u{30af}\u{306e}\u{30d9}\u{30f3}\u{30c1}\u{30de}\u{30fc}\u{30af}"
    );
  ]

let sql_string s = "'" ^ String.concat "''" (String.split_on_char '\'' s) ^ "'"

let schema =
  String.concat "\n"
    [
      "CREATE TABLE world (id integer PRIMARY KEY, randomnumber integer NOT \
       NULL);";
      "INSERT INTO world (id, randomnumber) SELECT i, 1 + floor(random() * \
       10000)::integer FROM generate_series(1, 10000) AS i;";
      "CREATE TABLE fortune (id integer PRIMARY KEY, message varchar(2048) NOT \
       NULL);";
      "INSERT INTO fortune (id, message) VALUES "
      ^ String.concat ", "
          (List.map
             (fun (id, m) -> Printf.sprintf "(%d, %s)" id (sql_string m))
             fortunes)
      ^ ";";
      "VACUUM ANALYZE;";
      "";
    ]

(* Beside the defaults, for one core of a 2-core machine shared with the
   load generator. *)
let settings ~port ~dir =
  [
    "listen_addresses = '127.0.0.1'";
    Printf.sprintf "port = %d" port;
    Printf.sprintf "unix_socket_directories = '%s'" dir;
    "max_connections = 100";
    "synchronous_commit = off";
    "jit = off";
    "huge_pages = off";
    "log_min_messages = warning";
  ]

(* The newest installed PostgreSQL, 15 when it is there. *)
let bin_dir () =
  match Sys.getenv_opt "BRAID_BENCH_PG_BIN" with
  | Some d -> d
  | None -> (
      let root = "/usr/lib/postgresql" in
      let has v = Sys.file_exists (Filename.concat root (v ^ "/bin/initdb")) in
      if has "15" then Filename.concat root "15/bin"
      else
        match
          (try Array.to_list (Sys.readdir root) with Sys_error _ -> [])
          |> List.filter has
          |> List.sort (fun a b ->
                 compare (int_of_string_opt b) (int_of_string_opt a))
        with
        | v :: _ -> Filename.concat root (v ^ "/bin")
        | [] ->
            failwith
              "web: PostgreSQL not found under /usr/lib/postgresql (apt-get \
               install postgresql), or set BRAID_BENCH_PG_BIN")

let bin name = Filename.concat (bin_dir ()) name

type t = {
  dir : string;
  data : string;
  port : int;
  as_owner : string list;  (** runuser -u postgres -- when root *)
  mutable running : bool;
  mutable removed : bool;
}

let url t = Printf.sprintf "postgres://postgres@127.0.0.1:%d/hello_world" t.port

(* Runs [argv], its output appended to [log]; [Error output] if it fails. *)
let run ~log argv =
  let cmd =
    String.concat " " (List.map Filename.quote argv)
    ^ " >>" ^ Filename.quote log ^ " 2>&1 </dev/null"
  in
  let before =
    try In_channel.with_open_bin log In_channel.input_all
    with Sys_error _ -> ""
  in
  match Sys.command cmd with
  | 0 -> Ok ()
  | n ->
      let all =
        try In_channel.with_open_bin log In_channel.input_all
        with Sys_error _ -> ""
      in
      let len = String.length before in
      Error
        (Printf.sprintf "exit %d: %s" n
           (String.sub all len (String.length all - len)))

let step t what argv =
  match run ~log:(Filename.concat t.dir "commands.log") argv with
  | Ok () -> ()
  | Error msg ->
      failwith (Printf.sprintf "web: PostgreSQL %s failed (%s)" what msg)

let pg_ctl t args = t.as_owner @ [ bin "pg_ctl"; "-D"; t.data ] @ args

let stop t =
  if t.running then (
    t.running <- false;
    let log = Filename.concat t.dir "commands.log" in
    match run ~log (pg_ctl t [ "-m"; "fast"; "-w"; "-t"; "30"; "stop" ]) with
    | Ok () -> ()
    | Error _ ->
        ignore (run ~log (pg_ctl t [ "-m"; "immediate"; "-w"; "stop" ])));
  if not t.removed then (
    t.removed <- true;
    Peers.remove_tree t.dir)

let psql t ?(database = "hello_world") args =
  [
    bin "psql";
    "-X";
    "-q";
    "-v";
    "ON_ERROR_STOP=1";
    "-h";
    "127.0.0.1";
    "-p";
    string_of_int t.port;
    "-U";
    "postgres";
    "-d";
    database;
  ]
  @ args

let query t sql =
  let out = Filename.temp_file "braid-bench-psql" ".out" in
  Fun.protect
    ~finally:(fun () -> Sys.remove out)
    (fun () ->
      let cmd =
        String.concat " "
          (List.map Filename.quote (psql t [ "-A"; "-t"; "-c"; sql ]))
        ^ " >" ^ Filename.quote out ^ " 2>&1 </dev/null"
      in
      match Sys.command cmd with
      | 0 -> In_channel.with_open_bin out In_channel.input_all
      | n ->
          failwith
            (Printf.sprintf "web: psql %S failed (exit %d): %s" sql n
               (In_channel.with_open_bin out In_channel.input_all)))

let start ~cpu () =
  let dir = Peers.temp_dir "braid-bench-pg" in
  let root = Unix.geteuid () = 0 in
  let t =
    {
      dir;
      data = Filename.concat dir "data";
      port = Bench_server.Procs.free_port ();
      as_owner = (if root then [ "runuser"; "-u"; "postgres"; "--" ] else []);
      running = false;
      removed = false;
    }
  in
  match
    (* The server's files belong to the user it runs as. *)
    (if root then
       let pw =
         try Unix.getpwnam "postgres"
         with Not_found ->
           failwith "web: running as root, but there is no postgres user"
       in
       Unix.chown dir pw.pw_uid pw.pw_gid);
    step t "initdb"
      (t.as_owner
      @ [
          bin "initdb";
          "-D";
          t.data;
          "-U";
          "postgres";
          "--auth=trust";
          "--encoding=UTF8";
          "--no-locale";
          "--no-sync";
        ]);
    Out_channel.with_open_gen [ Open_append; Open_text ] 0o600
      (Filename.concat t.data "postgresql.conf") (fun oc ->
        output_string oc "\n# braid bench web\n";
        List.iter
          (fun l -> output_string oc (l ^ "\n"))
          (settings ~port:t.port ~dir));
    t.running <- true;
    step t "start"
      ([ "taskset"; "-c"; string_of_int cpu ]
      @ pg_ctl t
          [ "-l"; Filename.concat dir "server.log"; "-w"; "-t"; "60"; "start" ]
      );
    step t "createdb"
      (psql t ~database:"postgres" [ "-c"; "CREATE DATABASE hello_world" ]);
    let file = Filename.concat dir "schema.sql" in
    Out_channel.with_open_bin file (fun oc -> output_string oc schema);
    Unix.chmod file 0o644;
    step t "schema" (psql t [ "-f"; file ])
  with
  | () -> t
  | exception e ->
      let log =
        try
          In_channel.with_open_bin
            (Filename.concat dir "server.log")
            In_channel.input_all
        with Sys_error _ -> ""
      in
      stop t;
      if log <> "" then prerr_string ("PostgreSQL's log:\n" ^ log);
      raise e

let with_cluster ~cpu f =
  let t = start ~cpu () in
  Fun.protect ~finally:(fun () -> stop t) (fun () -> f t)

let server_pids t =
  match
    In_channel.with_open_bin
      (Filename.concat t.data "postmaster.pid")
      In_channel.input_line
  with
  | Some line -> (
      match int_of_string_opt (String.trim line) with
      | None -> []
      | Some pid ->
          let children =
            try
              In_channel.with_open_bin
                (Printf.sprintf "/proc/%d/task/%d/children" pid pid)
                In_channel.input_all
              |> String.split_on_char ' '
              |> List.filter_map int_of_string_opt
            with Sys_error _ -> []
          in
          pid :: children)
  | None -> []
  | exception Sys_error _ -> []

let version () =
  let out = Filename.temp_file "braid-bench-pg" ".version" in
  Fun.protect
    ~finally:(fun () -> Sys.remove out)
    (fun () ->
      ignore
        (Sys.command
           (Filename.quote (bin "postgres")
           ^ " --version >" ^ Filename.quote out ^ " 2>&1"));
      String.trim (In_channel.with_open_bin out In_channel.input_all))
