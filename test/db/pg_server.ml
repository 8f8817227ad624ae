type t = { dir : string; mutable stopped : bool }

(* Debian installs each major version under /usr/lib/postgresql/N (15 on
   Debian 12, 17 on 13); the newest present is used. *)
let bin_dir =
  lazy
    (let root = "/usr/lib/postgresql" in
     let versions =
       try
         Sys.readdir root |> Array.to_list |> List.filter_map int_of_string_opt
       with Sys_error _ -> []
     in
     match List.sort (fun a b -> compare b a) versions with
     | newest :: _ -> Printf.sprintf "%s/%d/bin" root newest
     | [] ->
         failwith
           "no PostgreSQL server in /usr/lib/postgresql: run scripts/setup.sh")

let bin name = Filename.concat (Lazy.force bin_dir) name
let as_root = Unix.getuid () = 0

(* Runs [argv], as the postgres user when we are root; its output goes to a
   log in the server's directory, shown if it fails. *)
let run dir argv =
  let argv =
    if as_root then "runuser" :: "-u" :: "postgres" :: "--" :: argv else argv
  in
  let log = Filename.concat dir "command.log" in
  let command =
    String.concat " " (List.map Filename.quote argv)
    ^ " >" ^ Filename.quote log ^ " 2>&1"
  in
  match Sys.command command with
  | 0 -> ()
  | code ->
      let output =
        try In_channel.with_open_bin log In_channel.input_all
        with Sys_error _ -> ""
      in
      failwith (Printf.sprintf "%s exited with %d:\n%s" command code output)

let data t = Filename.concat t.dir "data"

let pg_ctl_start t =
  run t.dir
    [
      bin "pg_ctl";
      "-D";
      data t;
      "-l";
      Filename.concat t.dir "server.log";
      "-w";
      (* Unix-domain socket in our directory only; durability is not what
         these tests are about. *)
      "-o";
      Printf.sprintf "-c listen_addresses= -k %s -c fsync=off" t.dir;
      "start";
    ]

let remove t = ignore (Sys.command ("rm -rf " ^ Filename.quote t.dir))

let stop t =
  if not t.stopped then (
    t.stopped <- true;
    (try run t.dir [ bin "pg_ctl"; "-D"; data t; "-m"; "immediate"; "stop" ]
     with Failure _ -> (* Already stopped (a test stopped it). *) ());
    remove t)

let start () =
  let dir = Filename.temp_dir "braid-pg" "" in
  let t = { dir; stopped = false } in
  at_exit (fun () -> stop t);
  if as_root then (
    Unix.chmod dir 0o700;
    ignore (Sys.command ("chown postgres " ^ Filename.quote dir)));
  run dir
    [
      bin "initdb";
      "-D";
      data t;
      "-U";
      "braid";
      "-A";
      "trust";
      "-E";
      "UTF8";
      "--no-sync";
    ];
  pg_ctl_start t;
  t

let conninfo t = Printf.sprintf "host=%s dbname=postgres user=braid" t.dir

let stop_immediately t =
  run t.dir [ bin "pg_ctl"; "-D"; data t; "-m"; "immediate"; "stop" ]

(* After an immediate stop, server processes may outlive the postmaster for a
   moment (longer on a loaded machine), and a start then refuses: "pre-existing
   shared memory block is still in use". So a restart tries again, for up to
   about 10 s, before it reports the last failure. *)
let restart t =
  let rec attempt n =
    match pg_ctl_start t with
    | () -> ()
    | exception Failure _ when n > 1 ->
        Unix.sleepf 0.5;
        attempt (n - 1)
  in
  attempt 20
