(* HTTPS with real clients: the [braid] binary serving TLS beside plain
   HTTP, probed with curl, openssl s_client, Python's ssl module and wrk.
   The certificates are made at start by the openssl command: a CA, and
   leaves for a.test and b.test (ECDSA P-256, with subjectAltName) that it
   signs. Assertions are on outcomes (bytes, subjects, alerts, counters,
   an end of stream); the only times are generous deadlines. *)

open Text_and_process

(* {1 Processes} *)

let binary = "../../bin/main.exe"

(* Removed at exit, with whatever the servers left in them. *)
let temp_dirs = ref []

let temp_dir () =
  let d = Unix.realpath (Filename.temp_dir "braid-https" "") in
  temp_dirs := d :: !temp_dirs;
  d

let () =
  at_exit (fun () ->
      List.iter
        (fun d ->
          ignore (Sys.command (Filename.quote_command "rm" [ "-rf"; d ])))
        !temp_dirs)

let now = Unix.gettimeofday

(* Polls every 5 ms up to [seconds], then fails naming [what]. *)
let wait_until ?(seconds = 10.) what cond =
  let deadline = now () +. seconds in
  let rec go () =
    if not (cond ()) then
      if now () > deadline then
        Alcotest.failf "%s: not after %.0f s" what seconds
      else (
        Unix.sleepf 0.005;
        go ())
  in
  go ()

let describe : Unix.process_status -> string = function
  | WEXITED n -> Printf.sprintf "exited with %d" n
  | WSIGNALED n | WSTOPPED n -> Printf.sprintf "killed by signal %d" n

(* Waits for [pid] up to [seconds]; then kills it and fails. *)
let wait_process ?(seconds = 20.) what pid =
  let status = ref None in
  (try
     wait_until ~seconds what (fun () ->
         match Unix.waitpid [ WNOHANG ] pid with
         | 0, _ -> false
         | _, s ->
             status := Some s;
             true
         | exception Unix.Unix_error (EINTR, _, _) -> false)
   with e ->
     (try Unix.kill pid Sys.sigkill with Unix.Unix_error _ -> ());
     ignore (waitpid pid);
     raise e);
  Option.get !status

(* Runs [argv] with [input] on its standard input; its exit code (128 + n
   for a signal) and its standard output and error, mixed. *)
let run ?(input = "") ?(seconds = 20.) argv =
  let inp = Filename.temp_file "braid-https" ".in"
  and out = Filename.temp_file "braid-https" ".out" in
  write_file inp input;
  let in_fd = Unix.openfile inp [ O_RDONLY ] 0 in
  let out_fd = Unix.openfile out [ O_WRONLY; O_TRUNC ] 0o600 in
  let pid =
    Unix.create_process (List.hd argv) (Array.of_list argv) in_fd out_fd out_fd
  in
  Unix.close in_fd;
  Unix.close out_fd;
  let status = wait_process ~seconds (String.concat " " argv) pid in
  let text = read_file out in
  Sys.remove inp;
  Sys.remove out;
  ( (match status with WEXITED n -> n | WSIGNALED n | WSTOPPED n -> 128 + n),
    text )

let check_contains what text sub =
  if not (contains text sub) then
    Alcotest.failf "%s: %S not found in:\n%s" what sub text

let check_lacks what text sub =
  if contains text sub then Alcotest.failf "%s: %S found in:\n%s" what sub text

(* {1 Certificates} *)

let openssl args =
  match run ("openssl" :: args) with
  | 0, _ -> ()
  | n, out -> Alcotest.failf "openssl %s: exit %d: %s" (List.hd args) n out

(* A P-256 key and a certificate for [name].test with subjectAltName,
   signed by the CA of [dir]. *)
let leaf dir name =
  let p ext = Printf.sprintf "%s/%s.%s" dir name ext in
  write_file (p "ext")
    (Printf.sprintf "subjectAltName=DNS:%s.test\nbasicConstraints=CA:FALSE\n"
       name);
  openssl
    [
      "req";
      "-new";
      "-newkey";
      "ec";
      "-pkeyopt";
      "ec_paramgen_curve:P-256";
      "-nodes";
      "-keyout";
      p "key";
      "-out";
      p "csr";
      "-subj";
      "/CN=" ^ name ^ ".test";
    ];
  openssl
    [
      "x509";
      "-req";
      "-in";
      p "csr";
      "-CA";
      dir ^ "/ca.pem";
      "-CAkey";
      dir ^ "/ca.key";
      "-set_serial";
      string_of_int (Hashtbl.hash name);
      "-days";
      "2";
      "-extfile";
      p "ext";
      "-out";
      p "pem";
    ]

let certs =
  lazy
    (let dir = temp_dir () in
     openssl
       [
         "req";
         "-x509";
         "-newkey";
         "ec";
         "-pkeyopt";
         "ec_paramgen_curve:P-256";
         "-nodes";
         "-keyout";
         dir ^ "/ca.key";
         "-out";
         dir ^ "/ca.pem";
         "-days";
         "2";
         "-subj";
         "/CN=Braid test CA";
       ];
     leaf dir "a";
     leaf dir "b";
     write_file (dir ^ "/broken.pem")
       "-----BEGIN CERTIFICATE-----\nnot base64\n";
     dir)

let ca () = Lazy.force certs ^ "/ca.pem"
let pem name = Printf.sprintf "%s/%s.pem" (Lazy.force certs) name
let key name = Printf.sprintf "%s/%s.key" (Lazy.force certs) name

let tls_args names =
  List.concat_map (fun n -> [ "--tls-cert"; pem n; "--tls-key"; key n ]) names

(* HTTPS on a free port with the certificate installed as [dir]/cur.pem and
   its key (which the reload tests replace). *)
let current_certificate dir =
  [
    "--tls-port";
    "0";
    "--tls-cert";
    dir ^ "/cur.pem";
    "--tls-key";
    dir ^ "/cur.key";
  ]

(* {1 The server} *)

type server = {
  pid : int;
  dir : string;
  http : int;
  https : int;
  mutable stopped : bool;
}

(* A document root: [data.bin] (200 kB that no compression or off-by-one
   would leave intact) and [s.txt]. *)
let data =
  lazy
    (let st = Random.State.make [| 19 |] in
     String.init 200_000 (fun _ -> Char.chr (Random.State.int st 256)))

let site dir =
  let root = dir ^ "/root" in
  Unix.mkdir root 0o755;
  write_file (root ^ "/data.bin") (Lazy.force data);
  write_file (root ^ "/s.txt") "small\n";
  root

let banner_port ~prefix line =
  if String.starts_with ~prefix line then
    let rest =
      String.sub line (String.length prefix)
        (String.length line - String.length prefix)
    in
    Scanf.sscanf_opt rest "%d/" Fun.id
  else None

(* [braid serve --port 0 ARGS] in [dir] (its output and error log there),
   once both listeners are up; the ports from its banner. *)
let start ?dir args =
  let dir = match dir with Some d -> d | None -> temp_dir () in
  let out = dir ^ "/stdout" and err = dir ^ "/stderr" in
  let fd path = Unix.openfile path [ O_WRONLY; O_TRUNC; O_CREAT ] 0o600 in
  let out_fd = fd out and err_fd = fd err in
  let null = Unix.openfile "/dev/null" [ O_RDONLY ] 0 in
  let argv = binary :: "serve" :: "--port" :: "0" :: args in
  let pid =
    Unix.create_process binary (Array.of_list argv) null out_fd err_fd
  in
  List.iter Unix.close [ out_fd; err_fd; null ];
  let ports () =
    let lines = String.split_on_char '\n' (read_if_exists out) in
    let find prefix = List.find_map (banner_port ~prefix) lines in
    ( find "braid: serving http://127.0.0.1:",
      find "braid: serving https://127.0.0.1:" )
  in
  (try
     wait_until "the banner" (fun () ->
         match ports () with
         | Some _, Some _ -> true
         | _ -> (
             match Unix.waitpid [ WNOHANG ] pid with
             | 0, _ -> false
             | _, s ->
                 Alcotest.failf "braid %s: %s" (describe s) (read_file err)))
   with e ->
     (try Unix.kill pid Sys.sigkill with Unix.Unix_error _ -> ());
     (try ignore (waitpid pid) with Unix.Unix_error _ -> ());
     raise e);
  match ports () with
  | Some http, Some https -> { pid; dir; http; https; stopped = false }
  | _ -> assert false

(* SIGTERM: a graceful shutdown, exit 0 (TLS connections included). *)
let stop s =
  if not s.stopped then (
    s.stopped <- true;
    match Unix.kill s.pid Sys.sigterm with
    | exception Unix.Unix_error _ -> ()
    | () -> (
        match wait_process "braid's exit" s.pid with
        | WEXITED 0 -> ()
        | st ->
            Alcotest.failf "braid %s at SIGTERM: %s" (describe st)
              (read_if_exists (s.dir ^ "/stderr"))))

(* After a failure: no second failure to hide the first. *)
let kill s =
  if not s.stopped then (
    s.stopped <- true;
    (try Unix.kill s.pid Sys.sigkill with Unix.Unix_error _ -> ());
    ignore (waitpid s.pid))

let with_server ?dir args f =
  let s = start ?dir args in
  match f s with
  | v ->
      stop s;
      v
  | exception e ->
      kill s;
      raise e

let error_log s = read_if_exists (s.dir ^ "/error.log")

(* Sends SIGHUP and waits for the [n]th outcome of a reload in the log. *)
let reload s n =
  Unix.kill s.pid Sys.sighup;
  wait_until "a reload's outcome" (fun () ->
      let log = error_log s in
      count log "configuration reloaded" + count log "reload rejected" >= n)

(* {1 Clients} *)

let curl args = run ("curl" :: "-sS" :: "--max-time" :: "10" :: args)

(* curl for https://NAME:PORT/PATH with NAME resolved to the loopback. *)
let curl_https ?(name = "a.test") ?(extra = []) port path =
  curl
    ([
       "--resolve";
       Printf.sprintf "%s:%d:127.0.0.1" name port;
       "--cacert";
       ca ();
     ]
    @ extra
    @ [ Printf.sprintf "https://%s:%d%s" name port path ])

let s_client ?(input = "") port args =
  run ~input
    ("openssl" :: "s_client" :: "-connect"
    :: Printf.sprintf "127.0.0.1:%d" port
    :: args)

(* The subject of the certificate the server presents for [servername]
   (no SNI if none), verified against the CA. *)
let subject ?servername port =
  let sni =
    match servername with
    | Some n -> [ "-servername"; n ]
    | None -> [ "-noservername" ]
  in
  let code, out = s_client port (sni @ [ "-CAfile"; ca () ]) in
  if code <> 0 then Alcotest.failf "s_client: exit %d: %s" code out;
  let line =
    List.find_opt
      (fun l -> String.starts_with ~prefix:"subject=" l)
      (String.split_on_char '\n' out)
  in
  match line with
  | Some l -> String.sub l 8 (String.length l - 8)
  | None -> Alcotest.failf "no subject in:\n%s" out

(* A sample of the metrics (scraped over plain HTTP), as a whole number. *)
let gauge s name =
  let code, body =
    curl [ Printf.sprintf "http://127.0.0.1:%d/metrics" s.http ]
  in
  if code <> 0 then Alcotest.failf "metrics: curl exit %d: %s" code body;
  let line =
    List.find_opt
      (fun l -> String.starts_with ~prefix:(name ^ " ") l)
      (String.split_on_char '\n' body)
  in
  match line with
  | Some l -> Scanf.sscanf l "%_s %f" int_of_float
  | None -> Alcotest.failf "no %s in the metrics:\n%s" name body

let handshakes s outcome =
  gauge s (Printf.sprintf "braid_tls_handshakes_total{outcome=\"%s\"}" outcome)

let connect port =
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Unix.setsockopt_float s SO_RCVTIMEO 10.;
  Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port));
  s

(* {1 1. Versions, ALPN, plain HTTP beside} *)

let rec versions_and_alpn () =
  let dir = temp_dir () in
  let root = site dir in
  with_server ~dir
    (tls_args [ "a" ]
    @ [ "--tls-port"; "0"; "--root"; root; "--demo"; "--max-body"; "4000000" ])
  @@ fun s ->
  let fetch version_flags =
    let file = dir ^ "/got" in
    (try Sys.remove file with Sys_error _ -> ());
    let code, out =
      curl_https s.https "/data.bin"
        ~extra:([ "-v"; "-o"; file ] @ version_flags)
    in
    if code <> 0 then Alcotest.failf "curl exit %d: %s" code out;
    Alcotest.(check bool)
      "the file, byte-exact" true
      (read_file file = Lazy.force data);
    out
  in
  let v13 = fetch [ "--tlsv1.3" ] in
  check_contains "TLS 1.3" v13 "SSL connection using TLSv1.3";
  (* HTTP/2 is served: curl chooses h2, or http/1.1 when it offers only that. *)
  check_contains "curl's ALPN" v13 "ALPN: server accepted h2";
  check_contains "curl's ALPN, HTTP/1.1 only"
    (fetch [ "--tlsv1.3"; "--http1.1" ])
    "ALPN: server accepted http/1.1";
  let v12 = fetch [ "--tlsv1.2"; "--tls-max"; "1.2" ] in
  check_contains "TLS 1.2" v12 "SSL connection using TLSv1.2 / ECDHE-";
  (* The CA is what makes curl trust the server: without it, refused. *)
  let code, out =
    curl
      [
        "--resolve";
        Printf.sprintf "a.test:%d:127.0.0.1" s.https;
        Printf.sprintf "https://a.test:%d/s.txt" s.https;
      ]
  in
  Alcotest.(check int) ("without the CA: " ^ out) 60 code;
  (* ALPN: http/1.1 chosen; a client offering only h2 gets no ALPN
     answer, but a handshake. *)
  let code, out = s_client s.https [ "-alpn"; "http/1.1" ] in
  Alcotest.(check int) "s_client -alpn http/1.1" 0 code;
  check_contains "ALPN" out "ALPN protocol: http/1.1";
  let code, out = s_client s.https [ "-alpn"; "h2" ] in
  Alcotest.(check int) "s_client -alpn h2" 0 code;
  check_contains "h2 (HTTP/2 is served)" out "ALPN protocol: h2";
  let code, out = s_client s.https [ "-alpn"; "spdy/3" ] in
  Alcotest.(check int) "s_client -alpn spdy/3" 0 code;
  check_contains "no ALPN" out "No ALPN negotiated";
  check_lacks "no ALPN" out "ALPN protocol:";
  (* Plain HTTP beside, and no plain HTTP on the TLS port. *)
  let code, body =
    curl [ Printf.sprintf "http://127.0.0.1:%d/data.bin" s.http ]
  in
  Alcotest.(check int) "plain curl" 0 code;
  Alcotest.(check bool) "plain, byte-exact" true (body = Lazy.force data);
  let code, out =
    curl
      [
        "-o";
        "/dev/null";
        "-w";
        "%{http_code}";
        Printf.sprintf "http://127.0.0.1:%d/s.txt" s.https;
      ]
  in
  if code = 0 && contains out "200" then
    Alcotest.failf "plain HTTP answered on the TLS port: %s" out;
  over_tls s dir

(* The paths that differ from plain HTTP's: a byte range (no sendfile over
   TLS), uploads of many records (Content-Length and chunked), and
   pipelined requests decrypted from one record. *)
and over_tls s dir =
  let data = Lazy.force data in
  let code, body =
    curl_https s.https "/data.bin" ~extra:[ "-r"; "70000-70999" ]
  in
  Alcotest.(check int) "curl -r" 0 code;
  Alcotest.(check bool) "the range" true (body = String.sub data 70000 1000);
  let upload = dir ^ "/upload" in
  let sent = data ^ data ^ data in
  write_file upload sent;
  let reversed =
    String.init (String.length sent) (fun i ->
        sent.[String.length sent - 1 - i])
  in
  List.iter
    (fun extra ->
      let code, body =
        curl_https s.https "/reverse"
          ~extra:([ "--data-binary"; "@" ^ upload ] @ extra)
      in
      Alcotest.(check int) "upload" 0 code;
      Alcotest.(check bool) "600 kB reversed" true (body = reversed))
    [ []; [ "-H"; "Transfer-Encoding: chunked" ] ];
  let get ?(close = false) path =
    Printf.sprintf "GET %s HTTP/1.1\r\nHost: a.test\r\n%s\r\n" path
      (if close then "Connection: close\r\n" else "")
  in
  let code, out =
    s_client
      ~input:
        (get "/s.txt" ^ get "/data.bin" ^ get "/s.txt"
       ^ get ~close:true "/s.txt")
      s.https [ "-quiet"; "-ign_eof" ]
  in
  Alcotest.(check int) "s_client, pipelined" 0 code;
  Alcotest.(check int) "4 answers" 4 (count out "HTTP/1.1 200 OK");
  Alcotest.(check int) "3 small" 3 (count out "\r\n\r\nsmall\n");
  check_contains "the file" out data

(* HTTPS beside plain HTTP on one loop (the default), the site, and the
   metrics (handshakes and the loop's fibers counted). *)
let with_metrics_server f =
  let dir = temp_dir () in
  let root = site dir in
  with_server ~dir
    (tls_args [ "a" ]
    @ [ "--tls-port"; "0"; "--root"; root; "--metrics"; "/metrics" ])
    f

(* {1 2. TLS 1.0 and 1.1 refused} *)

let old_versions_refused () =
  with_metrics_server @@ fun s ->
  let failed = handshakes s "failed" in
  List.iter
    (fun version ->
      let code, out =
        s_client s.https [ version; "-cipher"; "DEFAULT@SECLEVEL=0" ]
      in
      if code = 0 then Alcotest.failf "%s: a session:\n%s" version out;
      check_contains version out "alert protocol version";
      check_contains version out "Cipher is (NONE)")
    [ "-tls1"; "-tls1_1" ];
  (* The same client at 1.2 gets a session: the refusal is the version. *)
  let code, out =
    s_client s.https [ "-tls1_2"; "-cipher"; "DEFAULT@SECLEVEL=0" ]
  in
  Alcotest.(check int) ("-tls1_2: " ^ out) 0 code;
  check_contains "-tls1_2" out "New, TLSv1.2, Cipher is ECDHE-";
  Alcotest.(check int)
    "failed handshakes counted" (failed + 2) (handshakes s "failed");
  let code, body = curl_https s.https "/s.txt" in
  Alcotest.(check (pair int string)) "still serving" (0, "small\n") (code, body)

(* {1 3. SNI} *)

let sni () =
  let dir = temp_dir () in
  let root = site dir in
  with_server ~dir
    (tls_args [ "a"; "b" ] @ [ "--tls-port"; "0"; "--root"; root ])
  @@ fun s ->
  let verified name =
    s_client s.https
      [
        "-servername";
        name;
        "-verify_return_error";
        "-CAfile";
        ca ();
        "-verify_hostname";
        name;
      ]
  in
  List.iter
    (fun name ->
      let code, out = verified name in
      Alcotest.(check int) (name ^ " verifies: " ^ out) 0 code;
      check_contains name out ("subject=CN=" ^ name);
      check_contains name out "Verify return code: 0 (ok)")
    [ "a.test"; "b.test" ];
  (* A name the presented certificate lacks fails verification. *)
  let code, out =
    s_client s.https
      [
        "-servername";
        "b.test";
        "-verify_return_error";
        "-CAfile";
        ca ();
        "-verify_hostname";
        "a.test";
      ]
  in
  if code = 0 then
    Alcotest.failf "b.test's certificate verified as a.test:\n%s" out;
  Alcotest.(check string)
    "unknown name: the first" "CN=a.test"
    (subject ~servername:"c.test" s.https);
  Alcotest.(check string) "no SNI: the first" "CN=a.test" (subject s.https);
  let code, body = curl_https ~name:"b.test" s.https "/s.txt" in
  Alcotest.(check (pair int string))
    "curl https://b.test" (0, "small\n") (code, body);
  stop s;
  (* The other order: the default is whichever comes first. *)
  with_server (tls_args [ "b"; "a" ] @ [ "--tls-port"; "0" ]) @@ fun s ->
  Alcotest.(check string)
    "unknown name, b first" "CN=b.test"
    (subject ~servername:"c.test" s.https);
  Alcotest.(check string)
    "a.test, b first" "CN=a.test"
    (subject ~servername:"a.test" s.https)

(* {1 4. Session resumption} *)

let request_close =
  "GET /s.txt HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"

(* A request (so that TLS 1.3 tickets arrive before s_client ends), saving
   or reusing the session in [file]. "New" or "Reused". *)
let session port version ~file ~save =
  let code, out =
    s_client ~input:request_close port
      [ version; "-ign_eof"; (if save then "-sess_out" else "-sess_in"); file ]
  in
  if code <> 0 then Alcotest.failf "s_client %s: exit %d: %s" version code out;
  check_contains "the answer" out "small";
  if contains out "\nReused, " then "Reused"
  else if contains out "\nNew, " then "New"
  else Alcotest.failf "neither New nor Reused:\n%s" out

let resumption () =
  let dir = temp_dir () in
  let root = site dir in
  with_server ~dir
    (tls_args [ "a" ]
    @ [
        "--tls-port";
        "0";
        "--root";
        root;
        "--metrics";
        "/metrics";
        "--error-log";
        dir ^ "/error.log";
      ])
  @@ fun s ->
  let counts () = (handshakes s "full", handshakes s "resumed") in
  let full, resumed = counts () in
  let pair = Alcotest.(pair int int) in
  let files =
    List.map
      (fun version ->
        let file = Printf.sprintf "%s/session%s" dir version in
        Alcotest.(check string)
          (version ^ " first") "New"
          (session s.https version ~file ~save:true);
        Alcotest.(check string)
          (version ^ " again") "Reused"
          (session s.https version ~file ~save:false);
        (version, file))
      [ "-tls1_3"; "-tls1_2" ]
  in
  Alcotest.check pair "2 full, 2 resumed" (full + 2, resumed + 2) (counts ());
  (* New keys with the new certificates: the old sessions are refused, and
     the counter tells. *)
  reload s 1;
  check_contains "reloaded" (error_log s) "configuration reloaded";
  List.iter
    (fun (version, file) ->
      Alcotest.(check string)
        (version ^ " after a reload")
        "New"
        (session s.https version ~file ~save:false))
    files;
  Alcotest.check pair "2 more full" (full + 4, resumed + 2) (counts ())

(* {1 5. The handshake under the header timeout} *)

(* Reads until the end of the stream: its time since [since], or a failure
   if the server neither closes nor resets within the receive timeout. *)
let closed_after s ~since =
  let buf = Bytes.create 256 in
  let rec go () =
    match Unix.read s buf 0 256 with
    | 0 -> now () -. since
    | _ -> go () (* An alert, say. *)
    | exception Unix.Unix_error (ECONNRESET, _, _) -> now () -. since
    | exception Unix.Unix_error ((EAGAIN | EWOULDBLOCK), _, _) ->
        Alcotest.fail "the server neither closed nor reset"
  in
  go ()

(* What a client sends before stalling: nothing; three bytes of a record
   header; a ClientHello's record header announcing 200 bytes, and 35 of
   them. *)
let stalls =
  [
    ("silent", "");
    ("3 bytes of a record header", "\x16\x03\x01");
    ( "half a ClientHello",
      "\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03" ^ String.make 29 'r' );
  ]

let timeout_server dir =
  let root = site dir in
  tls_args [ "a" ]
  @ [
      "--tls-port";
      "0";
      "--root";
      root;
      "--header-timeout";
      "1";
      "--keep-alive-timeout";
      "1";
      "--metrics";
      "/metrics";
    ]

(* Clients that stall in the handshake are closed at the header timeout
   (1 s): not before half a second, not after 5 s (generous); meanwhile a
   client that speaks is served. [which] picks from [stalls]; the trickle
   sends the ClientHello's 40 bytes one every 150 ms (each read is prompt,
   the whole too slow). *)
let handshake_timeout ~which ~trickle () =
  let dir = temp_dir () in
  with_server ~dir (timeout_server dir) @@ fun s ->
  let failed = handshakes s "failed" in
  let start = now () in
  let stalled =
    List.map
      (fun (what, bytes) ->
        let c = connect s.https in
        if bytes <> "" then send c bytes;
        (what, c))
      (List.filter (fun (what, _) -> List.mem what which) stalls)
  in
  let trickling = if trickle then Some (connect s.https) else None in
  Fun.protect ~finally:(fun () ->
      List.iter (fun (_, c) -> Unix.close c) stalled;
      Option.iter Unix.close trickling)
  @@ fun () ->
  let code, body = curl_https s.https "/s.txt" in
  Alcotest.(check (pair int string)) "curl meanwhile" (0, "small\n") (code, body);
  let trickled =
    Option.map
      (fun c ->
        let hello = List.assoc "half a ClientHello" stalls in
        let rec go i =
          if i >= String.length hello then closed_after c ~since:start
          else
            match send c (String.sub hello i 1) with
            | () ->
                Unix.sleepf 0.15;
                go (i + 1)
            | exception Unix.Unix_error ((EPIPE | ECONNRESET), _, _) ->
                now () -. start
        in
        ("trickling", go 0))
      trickling
  in
  List.iter
    (fun (what, t) ->
      if t < 0.5 || t > 5. then Alcotest.failf "%s: closed after %.2f s" what t)
    (List.map (fun (what, c) -> (what, closed_after c ~since:start)) stalled
    @ Option.to_list trickled);
  (* The failures are counted once the server has let them go; a silent
     client never began a handshake: not counted (it was, before the fresh
     connections parked). *)
  let n =
    List.length (List.filter (fun (what, _) -> what <> "silent") stalled)
    + Option.fold ~none:0 ~some:(fun _ -> 1) trickling
  in
  wait_until "the failed handshakes counted" (fun () ->
      handshakes s "failed" >= failed + n);
  Alcotest.(check int)
    "failed handshakes: the silent not counted" (failed + n)
    (handshakes s "failed");
  let code, body = curl_https s.https "/s.txt" in
  Alcotest.(check (pair int string)) "curl after" (0, "small\n") (code, body)

(* A keep-alive connection that sends 3 bytes of a record header after its
   first answer, then stalls: closed at the keep-alive or header timeout
   (1 s), by 5 s. Python's ssl for the session, its raw socket for the
   bytes. *)
let py_partial_record =
  {|
import socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[2])
ctx.check_hostname = False
ss = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))))
ss.settimeout(10)
ss.sendall(b"GET /s.txt HTTP/1.1\r\nHost: a.test\r\n\r\n")
resp = b""
while b"small" not in resp:
    resp += ss.recv(65536)
socket.socket.sendall(ss, b"\x17\x03\x03")
t = time.time()
try:
    while socket.socket.recv(ss, 65536):
        pass
    print("closed after %.2f" % (time.time() - t))
except (TimeoutError, socket.timeout):
    print("not closed after %.2f" % (time.time() - t))
|}

let keep_alive_partial_record () =
  let dir = temp_dir () in
  with_server ~dir (timeout_server dir) @@ fun s ->
  let code, out =
    run [ "python3"; "-c"; py_partial_record; string_of_int s.https; ca () ]
  in
  Alcotest.(check int) ("python: " ^ out) 0 code;
  match Scanf.sscanf_opt out "closed after %f" Fun.id with
  | Some t when t <= 5. -> ()
  | _ -> Alcotest.failf "a partial record after an answer: %s" out

(* A kept-alive TLS connection idle long enough to be parked (its read
   interrupted, its buffers given back: two sweeps, a second apart) is
   served when it speaks again, twice; then a request split across two
   records and one pipelined behind it. *)
let py_parked =
  {|
import socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[2])
ctx.check_hostname = False
ss = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))))
ss.settimeout(10)
port = ss.getsockname()[1]
def answers(n):
    r = b""
    while r.count(b"small\n") < n:
        d = ss.recv(65536)
        if not d:
            sys.exit("closed after %r" % r)
        r += d
    return r.count(b"HTTP/1.1 200 OK")
for i in range(3):
    ss.sendall(b"GET /s.txt HTTP/1.1\r\nHost: a.test\r\n\r\n")
    print(answers(1), end=" ")
    if i < 2:
        time.sleep(2.5)
ss.sendall(b"GET /s.txt HTTP/1.1\r\nHo")
time.sleep(0.2)
ss.sendall(b"st: a.test\r\n\r\nGET /s.txt HTTP/1.1\r\nHost: a.test\r\n\r\n")
print(answers(2), ss.getsockname()[1] == port)
|}

let parked () =
  let dir = temp_dir () in
  let root = site dir in
  with_server ~dir (tls_args [ "a" ] @ [ "--tls-port"; "0"; "--root"; root ])
  @@ fun s ->
  let code, out =
    run [ "python3"; "-c"; py_parked; string_of_int s.https; ca () ]
  in
  Alcotest.(check (pair int string)) "python" (0, "1 1 1 2 True\n") (code, out)

(* How a connection the server ends is closed (RFC 9112 §9.6). The client
   reads the response to its end, then sends bytes on the raw socket once,
   as a client still sending would: a server that closed at once answers
   them with a reset (the socket's error: a read after the end of stream
   would not report it); one that lingers reads them, and none comes, even
   once its linger ends. Printed: the status and "reset" or "no reset"
   (none within 2 s). *)
let py_late_bytes =
  {|
import socket, ssl, sys, time
port, cafile, tls, request, late = sys.argv[1:6]
s = socket.create_connection(("127.0.0.1", int(port)))
if tls == "tls":
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.check_hostname = False
    s = ctx.wrap_socket(s)
s.settimeout(10)
s.sendall(request.encode())
resp = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    resp += d
socket.socket.sendall(s, late.encode())
outcome = "no reset"
t = time.time()
while time.time() - t < 2:
    if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
        outcome = "reset"
        break
    time.sleep(0.01)
print(resp.split(b" ")[1].decode(), outcome)
|}

(* A client that asked for the close and left nothing unread sends nothing
   more: the server closes at once, with no lingering close (nginx's
   lingering_close on does the same), on the TLS port as on the plain one.
   One that asked but whose body was never read (it waits for a
   100 Continue never sent) may still send it: the server lingers. *)
let close_as_asked () =
  let dir = temp_dir () in
  let root = site dir in
  with_server ~dir (tls_args [ "a" ] @ [ "--tls-port"; "0"; "--root"; root ])
  @@ fun s ->
  let late ~tls request =
    let port = if tls then s.https else s.http in
    let code, out =
      run
        [
          "python3";
          "-c";
          py_late_bytes;
          string_of_int port;
          ca ();
          (if tls then "tls" else "plain");
          request;
          "0123456789";
        ]
    in
    Alcotest.(check int) ("python: " ^ out) 0 code;
    String.trim out
  in
  let asked = "GET /s.txt HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"
  and body_unread =
    "POST /s.txt HTTP/1.1\r\n\
     Host: a.test\r\n\
     Connection: close\r\n\
     Expect: 100-continue\r\n\
     Content-Length: 10\r\n\
     \r\n"
  in
  List.iter
    (fun tls ->
      let port = if tls then "TLS" else "plain" in
      Alcotest.(check string)
        (port ^ ", Connection: close: closed at once")
        "200 reset" (late ~tls asked);
      match String.split_on_char ' ' (late ~tls body_unread) with
      | [ _; "no"; "reset" ] -> ()
      | _ ->
          Alcotest.failf "%s, a body never read: the server did not linger" port)
    [ true; false ]

(* {1 6. Certificates reloaded on SIGHUP} *)

let replace ~src ~dst =
  let tmp = dst ^ ".tmp" in
  write_file tmp (read_file src);
  Sys.rename tmp dst

let install dir name =
  replace ~src:(pem name) ~dst:(dir ^ "/cur.pem");
  replace ~src:(key name) ~dst:(dir ^ "/cur.key")

(* A keep-alive HTTPS client: one GET per line read, printing the status,
   the body, the certificate's common name and the local port (a new
   connection would show there). *)
let py_keep_alive =
  {|
import http.client, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[2])
ctx.check_hostname = False
c = http.client.HTTPSConnection("127.0.0.1", int(sys.argv[1]), context=ctx, timeout=20)
for line in sys.stdin:
    c.request("GET", "/s.txt")
    r = c.getresponse()
    body = r.read().decode().strip()
    cn = dict(x[0] for x in c.sock.getpeercert()["subject"])["commonName"]
    print(r.status, body, cn, c.sock.getsockname()[1], flush=True)
|}

let reload_certificates () =
  let dir = temp_dir () in
  let root = site dir in
  install dir "a";
  with_server ~dir
    (current_certificate dir
    @ [
        "--root";
        root;
        "--error-log";
        dir ^ "/error.log";
        "--keep-alive-timeout";
        "60";
      ])
  @@ fun s ->
  Alcotest.(check string) "before" "CN=a.test" (subject s.https);
  let to_py_r, to_py = Unix.pipe ~cloexec:true ()
  and from_py, from_py_w = Unix.pipe ~cloexec:true () in
  let py =
    Unix.create_process "python3"
      [| "python3"; "-c"; py_keep_alive; string_of_int s.https; ca () |]
      to_py_r from_py_w Unix.stderr
  in
  Unix.close to_py_r;
  Unix.close from_py_w;
  let ask = Unix.out_channel_of_descr to_py
  and answer = Unix.in_channel_of_descr from_py in
  Fun.protect ~finally:(fun () ->
      close_out_noerr ask;
      ignore (wait_process "python" py);
      close_in_noerr answer)
  @@ fun () ->
  let get () =
    output_string ask "get\n";
    flush ask;
    match input_line answer with
    | line -> line
    | exception End_of_file -> Alcotest.fail "the keep-alive client failed"
  in
  let first = get () in
  (match String.split_on_char ' ' first with
  | [ "200"; "small"; "a.test"; _ ] -> ()
  | _ -> Alcotest.failf "keep-alive, first: %S" first);
  install dir "b";
  reload s 1;
  check_contains "reloaded" (error_log s) "configuration reloaded";
  Alcotest.(check string) "new connections" "CN=b.test" (subject s.https);
  Alcotest.(check string)
    "new connections, SNI a.test" "CN=b.test"
    (subject ~servername:"a.test" s.https);
  Alcotest.(check string)
    "the connection in progress: same socket, same certificate" first (get ());
  (* A broken certificate: rejected, named, and B stays. *)
  replace ~src:(pem "broken") ~dst:(dir ^ "/cur.pem");
  reload s 2;
  let log = error_log s in
  check_contains "the rejection" log "reload rejected";
  check_contains "the file named" log
    (dir ^ "/cur.pem: not a usable certificate");
  Alcotest.(check string) "after the rejection" "CN=b.test" (subject s.https);
  let code, body = curl_https ~name:"b.test" s.https "/s.txt" in
  Alcotest.(check (pair int string)) "still serving" (0, "small\n") (code, body);
  Alcotest.(check string) "the connection in progress, still" first (get ());
  (* A key that does not match the certificate (A's key, B's certificate). *)
  install dir "b";
  replace ~src:(key "a") ~dst:(dir ^ "/cur.key");
  reload s 3;
  check_contains "a mismatched key" (error_log s) (dir ^ "/cur.key");
  Alcotest.(check int)
    "two rejections" 2
    (count (error_log s) "reload rejected");
  Alcotest.(check string) "after the mismatch" "CN=b.test" (subject s.https)

(* wrk's summary: requests done, and any error it reports. *)
let wrk_outcome out =
  match find out " requests in " with
  | None -> Alcotest.failf "wrk: %s" out
  | Some i ->
      let start =
        match String.rindex_from_opt out i '\n' with
        | Some j -> j + 1
        | None -> 0
      in
      let requests =
        int_of_string (String.trim (String.sub out start (i - start)))
      in
      check_lacks "wrk" out "Socket errors";
      check_lacks "wrk" out "Non-2xx";
      requests

let gone pid =
  match Unix.kill pid 0 with
  | () -> false
  | exception Unix.Unix_error (ESRCH, _, _) -> true

(* Two wrk loads of 3 s on the HTTPS port of [s]: one keeping its 8
   connections alive, one opening a connection per request (a handshake
   each, resumed or full). *)
let with_loads dir s f =
  let url = Printf.sprintf "https://127.0.0.1:%d/s.txt" s.https in
  let wrk name args =
    let out = Printf.sprintf "%s/%s.out" dir name in
    let fd = Unix.openfile out [ O_WRONLY; O_CREAT; O_TRUNC ] 0o600 in
    let argv = "wrk" :: "-t1" :: "-d3s" :: (args @ [ url ]) in
    let pid =
      spawn_alone (Array.of_list argv) ~stdin:Unix.stdin ~stdout:fd ~stderr:fd
    in
    Unix.close fd;
    (pid, out)
  in
  let loads =
    [
      wrk "keep-alive" [ "-c8" ];
      wrk "close" [ "-c4"; "-H"; "Connection: close" ];
    ]
  in
  Fun.protect ~finally:(fun () ->
      List.iter
        (fun (pid, _) -> try ignore (wait_process "wrk" pid) with _ -> ())
        loads)
  @@ fun () -> f loads

(* Each load ended well: no socket error, no non-2xx, some requests. *)
let check_loads loads =
  List.iter
    (fun (pid, out) ->
      (match wait_process "wrk" pid with
      | WEXITED 0 -> ()
      | st -> Alcotest.failf "wrk %s: %s" (describe st) (read_file out));
      let requests = wrk_outcome (read_file out) in
      if requests < 50 then Alcotest.failf "wrk: only %d requests" requests)
    loads

(* Six reloads alternating the certificates, on two loops, under two loads: wrk keeping
   its connections alive, and wrk opening one per request (a handshake per
   request, resumed or full). No request fails. *)
let reload_under_load () =
  let dir = temp_dir () in
  let root = site dir in
  install dir "a";
  with_server ~dir
    (current_certificate dir
    @ [ "--root"; root; "--error-log"; dir ^ "/error.log"; "--domains"; "2" ])
  @@ fun s ->
  with_loads dir s @@ fun loads ->
  Unix.sleepf 0.3;
  for i = 1 to 6 do
    let name = if i mod 2 = 1 then "b" else "a" in
    install dir name;
    reload s i;
    Alcotest.(check string)
      (Printf.sprintf "reload %d" i)
      ("CN=" ^ name ^ ".test")
      (subject s.https);
    Unix.sleepf 0.2
  done;
  Alcotest.(check int) "no rejection" 0 (count (error_log s) "reload rejected");
  check_loads loads

(* SIGUSR2 with HTTPS: the new process gets both sockets, reads the
   certificate files anew (B, installed before the signal), and serves on
   the same ports while the old one drains and exits 0; no request of
   either load fails. Twice. *)
let upgrade_under_load () =
  let dir = temp_dir () in
  let root = site dir in
  install dir "a";
  with_server ~dir
    (current_certificate dir
    @ [ "--root"; root; "--error-log"; dir ^ "/error.log" ])
  @@ fun first ->
  let latest = ref first.pid in
  Fun.protect ~finally:(fun () ->
      if !latest <> first.pid then
        try Unix.kill !latest Sys.sigkill with Unix.Unix_error _ -> ())
  @@ fun () ->
  with_loads dir first @@ fun loads ->
  Unix.sleepf 0.3;
  List.iteri
    (fun i name ->
      install dir name;
      let previous = !latest in
      Unix.kill previous Sys.sigusr2;
      wait_until "the successor" (fun () ->
          count (read_file (dir ^ "/stdout")) "braid: upgraded: process" > i);
      let line =
        List.filter
          (String.starts_with ~prefix:"braid: upgraded: process")
          (String.split_on_char '\n' (read_file (dir ^ "/stdout")))
        |> Fun.flip List.nth i
      in
      latest := Scanf.sscanf line "braid: upgraded: process %d" Fun.id;
      Alcotest.(check string)
        (Printf.sprintf "upgrade %d" (i + 1))
        ("CN=" ^ name ^ ".test")
        (subject first.https);
      (* Not our child: it drains, then is gone. *)
      if previous <> first.pid then
        wait_until "the drained process gone" (fun () -> gone previous))
    [ "b"; "a" ];
  check_loads loads;
  (* The first process has drained and exited 0 (waited for by [stop]);
     the latest serves until told. *)
  first.stopped <- true;
  (match wait_process "the first process" first.pid with
  | WEXITED 0 -> ()
  | st -> Alcotest.failf "the first process %s" (describe st));
  let code, body = curl_https first.https "/s.txt" in
  Alcotest.(check (pair int string))
    "the latest serves" (0, "small\n") (code, body);
  Unix.kill !latest Sys.sigterm;
  wait_until "the latest gone" (fun () -> gone !latest)

(* {1 7. Redirect from plain HTTP} *)

let redirect () =
  let dir = temp_dir () in
  let root = site dir in
  let args =
    tls_args [ "a" ]
    @ [
        "--tls-port";
        "0";
        "--root";
        root;
        "--health";
        "/health";
        "--metrics";
        "/metrics";
      ]
  in
  with_server ~dir (args @ [ "--https-redirect"; "on" ]) @@ fun s ->
  let code, out =
    curl
      [
        "-i";
        Printf.sprintf "http://127.0.0.1:%d/x?y=1" s.http;
        "-H";
        "Host: example.test";
      ]
  in
  Alcotest.(check int) "curl" 0 code;
  check_contains "status" out "HTTP/1.1 308 ";
  check_contains "location" out
    (Printf.sprintf "\nLocation: https://example.test:%d/x?y=1\r\n" s.https);
  (* The client's port is dropped, an IPv6 literal kept. *)
  let code, out =
    curl
      [
        "-i";
        Printf.sprintf "http://127.0.0.1:%d/s.txt" s.http;
        "-H";
        "Host: [::1]:80";
      ]
  in
  Alcotest.(check int) "curl" 0 code;
  check_contains "IPv6 host" out
    (Printf.sprintf "\nLocation: https://[::1]:%d/s.txt\r\n" s.https);
  (* An absolute-form target names the host; Host is then ignored (RFC
     9112 §3.2.2). Without a host, 400 rather than a made-up one (it was
     https://:PORT/ for an empty Host, and "localhost" without one). *)
  let raw request =
    let sock = Unix.socket PF_INET SOCK_STREAM 0 in
    Fun.protect ~finally:(fun () -> Unix.close sock) @@ fun () ->
    Unix.connect sock (ADDR_INET (Unix.inet_addr_loopback, s.http));
    Text_and_process.send sock request;
    Text_and_process.read_to_end sock
  in
  let answer =
    raw
      "GET http://target.test:80/a?b HTTP/1.1\r\n\
       Host: field.test\r\n\
       Connection: close\r\n\
       \r\n"
  in
  check_contains "absolute form: the target's host" answer
    (Printf.sprintf "\nLocation: https://target.test:%d/a?b\r\n" s.https);
  check_lacks "absolute form: not Host's" answer "field.test";
  List.iter
    (fun (what, request) ->
      let answer = raw request in
      check_contains what answer "HTTP/1.1 400 ";
      check_lacks what answer "Location:")
    [
      ("an empty Host", "GET /x HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n");
      ("HTTP/1.0 without Host", "GET /x HTTP/1.0\r\n\r\n");
    ];
  let status path port scheme =
    let code, out =
      curl
        [
          "-o";
          "/dev/null";
          "-w";
          "%{http_code}";
          "--cacert";
          ca ();
          "--resolve";
          Printf.sprintf "a.test:%d:127.0.0.1" port;
          Printf.sprintf "%s://a.test:%d%s" scheme port path;
        ]
    in
    if code <> 0 then Alcotest.failf "curl %s: exit %d: %s" path code out;
    out
  in
  Alcotest.(check string) "plain /health" "200" (status "/health" s.http "http");
  Alcotest.(check string)
    "plain /metrics" "200"
    (status "/metrics" s.http "http");
  Alcotest.(check string)
    "plain file: redirected" "308"
    (status "/s.txt" s.http "http");
  Alcotest.(check string) "https file" "200" (status "/s.txt" s.https "https");
  (* Following the redirect ends at the file. *)
  let code, body =
    curl
      [
        "-L";
        "--cacert";
        ca ();
        "--resolve";
        Printf.sprintf "a.test:%d:127.0.0.1" s.http;
        "--resolve";
        Printf.sprintf "a.test:%d:127.0.0.1" s.https;
        Printf.sprintf "http://a.test:%d/s.txt" s.http;
      ]
  in
  Alcotest.(check (pair int string)) "curl -L" (0, "small\n") (code, body);
  stop s;
  (* Off (the default): plain HTTP serves the file. *)
  with_server args @@ fun s ->
  Alcotest.(check string)
    "without the redirect" "200"
    (status "/s.txt" s.http "http")

(* KNOWN BUG (not run by default, see [known_bugs]): the redirect route has
   [max_body = Some 0] (lib/server/server.ml, [redirecting]), so a POST
   with a Content-Length body to the plain port gets 413 Content Too Large
   instead of the 308 that keeps the method and body (a chunked POST gets
   the 308). *)
let redirect_post () =
  let dir = temp_dir () in
  with_server ~dir
    (tls_args [ "a" ] @ [ "--tls-port"; "0"; "--https-redirect"; "on" ])
  @@ fun s ->
  let code, out =
    curl
      [
        "-o";
        "/dev/null";
        "-w";
        "%{http_code}";
        "-d";
        "a=1";
        Printf.sprintf "http://127.0.0.1:%d/form" s.http;
      ]
  in
  Alcotest.(check (pair int string)) "POST with a body" (0, "308") (code, out)

(* {1 8. A bad start} *)

(* [braid serve ARGS] must exit non-zero, naming [names] on stderr, and
   never print its banner. *)
let refused args names =
  let dir = temp_dir () in
  let code, out =
    run
      (binary :: "serve" :: "--port" :: "0" :: "--tls-port" :: "0"
     :: "--error-log" :: (dir ^ "/error.log") :: args)
  in
  if code = 0 then
    Alcotest.failf "braid %s: exit 0: %s" (String.concat " " args) out;
  check_lacks "no banner" out "serving";
  List.iter (check_contains "the error" out) names

let bad_start () =
  let missing = Lazy.force certs ^ "/missing.pem" in
  refused [ "--tls-cert"; missing; "--tls-key"; key "a" ] [ missing ];
  refused [ "--tls-cert"; pem "a"; "--tls-key"; missing ] [ missing ];
  refused [ "--tls-cert"; pem "a"; "--tls-key"; key "b" ] [ key "b" ];
  refused [ "--tls-cert"; pem "broken"; "--tls-key"; key "a" ] [ pem "broken" ];
  (* The second certificate's key is checked too. *)
  refused
    (tls_args [ "a" ] @ [ "--tls-cert"; pem "b"; "--tls-key"; key "a" ])
    [ key "a" ];
  (* The same command with the right files starts. *)
  with_server (tls_args [ "a"; "b" ] @ [ "--tls-port"; "0" ]) @@ fun s ->
  Alcotest.(check string)
    "the right files" "CN=b.test"
    (subject ~servername:"b.test" s.https)

(* KNOWN BUG (not run by default, see [known_bugs]): a certificate without
   its key, or a key too many, is reported as "option '--tls-port': HTTPS
   needs at least one certificate and its key", naming neither the file
   nor what is missing: Layer.resolve (bin/layer.ml) blames the first
   setting of the layer whose partial configuration fails the checks, and
   --tls-port alone (applied before --tls-cert) has no certificate yet.
   The full configuration's own error ("the TLS certificate a.pem has no
   key") is the one to report. *)
let unpaired_files () =
  refused [ "--tls-cert"; pem "a" ] [ pem "a"; "no key" ];
  refused
    (tls_args [ "a" ] @ [ "--tls-key"; key "b" ])
    [ key "b"; "no certificate" ]

(* {1 9. The configuration file} *)

let config_file () =
  let dir = temp_dir () in
  let root = site dir in
  let certs = Lazy.force certs in
  (* Relative paths are the file's directory's. *)
  let conf ~redirect first second =
    Printf.sprintf
      "Listen 127.0.0.1:0\n\
       TlsListen 127.0.0.1:0\n\
       TlsCertificate %s.pem,%s.pem\n\
       TlsCertificateKey %s.key,%s.key\n\
       HttpsRedirect %s\n\
       DocumentRoot %s\n\
       ErrorLog %s/error.log\n"
      first second first second
      (if redirect then "on" else "off")
      root dir
  in
  let file = certs ^ "/braid.conf" in
  write_file file (conf ~redirect:false "a" "b");
  with_server ~dir [ "--config"; file ] @@ fun s ->
  Alcotest.(check string)
    "SNI b.test" "CN=b.test"
    (subject ~servername:"b.test" s.https);
  Alcotest.(check string) "default" "CN=a.test" (subject s.https);
  let code, body = curl_https ~name:"b.test" s.https "/s.txt" in
  Alcotest.(check (pair int string))
    "curl https://b.test" (0, "small\n") (code, body);
  let code, body = curl [ Printf.sprintf "http://127.0.0.1:%d/s.txt" s.http ] in
  Alcotest.(check (pair int string)) "plain" (0, "small\n") (code, body);
  (* SIGHUP re-reads the file: the other certificate first. *)
  write_file file (conf ~redirect:false "b" "a");
  reload s 1;
  check_contains "reloaded" (error_log s) "configuration reloaded";
  Alcotest.(check string)
    "default after the reload" "CN=b.test" (subject s.https);
  Alcotest.(check string)
    "SNI a.test after" "CN=a.test"
    (subject ~servername:"a.test" s.https);
  (* A key missing from the file: rejected with its line. *)
  write_file file
    "Listen 127.0.0.1:0\n\
     TlsListen 127.0.0.1:0\n\
     TlsCertificate a.pem\n\
     TlsCertificateKey missing.key\n";
  reload s 2;
  check_contains "rejected" (error_log s) "reload rejected";
  check_contains "the key named" (error_log s) (certs ^ "/missing.key");
  Alcotest.(check string) "kept" "CN=b.test" (subject s.https);
  stop s;
  write_file file (conf ~redirect:true "a" "b");
  with_server ~dir [ "--config"; file ] @@ fun s ->
  let code, out =
    curl [ "-i"; Printf.sprintf "http://127.0.0.1:%d/s.txt" s.http ]
  in
  Alcotest.(check int) "curl" 0 code;
  check_contains "HttpsRedirect on" out
    (Printf.sprintf "Location: https://127.0.0.1:%d/s.txt" s.https)

(* HttpsRedirect and TlsListen changed in the file and reloaded by SIGHUP:
   the redirect follows (new connections), and a changed TlsListen is
   reported as needing a restart. (Found ignored without a word on
   e987035's base; fixed by dadedd5.) *)
let reload_redirect () =
  let dir = temp_dir () in
  let root = site dir in
  let conf ~redirect ~tls_port =
    Printf.sprintf
      "Listen 127.0.0.1:0\n\
       TlsListen 127.0.0.1:%d\n\
       TlsCertificate %s\n\
       TlsCertificateKey %s\n\
       HttpsRedirect %s\n\
       DocumentRoot %s\n\
       ErrorLog %s/error.log\n"
      tls_port (pem "a") (key "a") redirect root dir
  in
  let file = dir ^ "/braid.conf" in
  write_file file (conf ~redirect:"off" ~tls_port:0);
  with_server ~dir [ "--config"; file ] @@ fun s ->
  let status () =
    let code, out =
      curl
        [
          "-o";
          "/dev/null";
          "-w";
          "%{http_code}";
          Printf.sprintf "http://127.0.0.1:%d/s.txt" s.http;
        ]
    in
    Alcotest.(check int) "curl" 0 code;
    out
  in
  Alcotest.(check string) "off" "200" (status ());
  write_file file (conf ~redirect:"on" ~tls_port:0);
  reload s 1;
  Alcotest.(check string) "on after the reload" "308" (status ());
  write_file file (conf ~redirect:"on" ~tls_port:(s.https + 1));
  reload s 2;
  check_contains "a warning" (error_log s) "TlsListen";
  let code, body = curl_https s.https "/s.txt" in
  Alcotest.(check (pair int string))
    "HTTPS on the old port" (0, "small\n") (code, body);
  write_file file (conf ~redirect:"off" ~tls_port:0);
  reload s 3;
  Alcotest.(check string) "off again" "200" (status ())

(* Connections still in their TLS handshake (silent clients) count among
   those waiting for a first request: (a) at --max-connections the oldest
   is closed to admit a new client, (b) a graceful shutdown closes them
   after its one-second grace instead of waiting for the header timeout or
   the shutdown deadline (15 s here). Each on the plain port too, as a
   control. (Found failing on a247996, where the handshake ran before the
   connection was tracked; fixed by 536aa8a.) *)
let silent_clients ~on_tls ~evict () =
  let dir = temp_dir () in
  let root = site dir in
  let limit = if evict then [ "--max-connections"; "3" ] else [] in
  let s =
    start ~dir
      (tls_args [ "a" ]
      @ [ "--tls-port"; "0"; "--root"; root; "--shutdown-timeout"; "15" ]
      @ limit)
  in
  Fun.protect ~finally:(fun () -> kill s) @@ fun () ->
  let silent =
    List.init 3 (fun _ -> connect (if on_tls then s.https else s.http))
  in
  Fun.protect ~finally:(fun () -> List.iter Unix.close silent) @@ fun () ->
  Unix.sleepf 0.2;
  if evict then
    (* (a) The oldest silent connection makes way. *)
    let code, body = curl_https ~extra:[ "--max-time"; "5" ] s.https "/s.txt" in
    Alcotest.(check (pair int string))
      "a new client at the limit" (0, "small\n") (code, body)
  else (
    (* (b) The drain closes the silent connections after its grace. *)
    s.stopped <- true;
    Unix.kill s.pid Sys.sigterm;
    match wait_process ~seconds:5. "the drain of silent connections" s.pid with
    | WEXITED 0 -> ()
    | st -> Alcotest.failf "braid %s" (describe st))

(* A client that connects, says nothing for [argv.(3)] seconds, then does
   its handshake and a request. *)
let py_late_hello =
  {|
import socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[2])
ctx.check_hostname = False
raw = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
time.sleep(float(sys.argv[3]))
ss = ctx.wrap_socket(raw, server_hostname="a.test")
ss.settimeout(10)
ss.sendall(b"GET /s.txt HTTP/1.1\r\nHost: a.test\r\n\r\n")
r = b""
while b"small\n" not in r:
    d = ss.recv(65536)
    if not d:
        sys.exit("closed after %r" % r)
    r += d
print(r.split(b"\r\n")[0].decode())
|}

(* Silent TLS clients wait with no fiber and no TLS state, as parked plain
   connections do: 60 of them add no fiber to the loop (they added one
   each before). One that then sends its ClientHello is served, and none
   counts as a failed handshake. *)
let silent_without_fibers () =
  with_metrics_server @@ fun s ->
  let code, body = curl_https s.https "/s.txt" in
  Alcotest.(check (pair int string)) "warm" (0, "small\n") (code, body);
  let failed = handshakes s "failed" in
  let before = gauge s "braid_loop_fibers" in
  let silent = List.init 60 (fun _ -> connect s.https) in
  Fun.protect ~finally:(fun () -> List.iter Unix.close silent) @@ fun () ->
  wait_until "the silent connections open" (fun () ->
      gauge s "braid_connections_open" >= 60);
  let during = gauge s "braid_loop_fibers" in
  if during - before >= 10 then
    Alcotest.failf "60 silent TLS connections: %d fibers, %d before" during
      before;
  let code, out =
    run [ "python3"; "-c"; py_late_hello; string_of_int s.https; ca (); "1.5" ]
  in
  Alcotest.(check (pair int string))
    "a late ClientHello served" (0, "HTTP/1.1 200 OK\n") (code, out);
  Alcotest.(check int) "no failed handshake" failed (handshakes s "failed")

(* [argv.(3)] connections, each with a handshake and a request answered,
   then idle for [argv.(5)] seconds; then the loop's fibers (from the
   metrics at [argv.(4)]), and each asks again: the answers counted. *)
let py_idle_after_request =
  {|
import re, socket, ssl, sys, time, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[2])
ctx.check_hostname = False
def answer(ss):
    r = b""
    while b"small\n" not in r:
        d = ss.recv(65536)
        if not d:
            sys.exit("closed after %r" % r)
        r += d
    return r.startswith(b"HTTP/1.1 200 OK")
conns = []
for _ in range(int(sys.argv[3])):
    ss = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))), server_hostname="a.test")
    ss.settimeout(10)
    ss.sendall(b"GET /s.txt HTTP/1.1\r\nHost: a.test\r\n\r\n")
    answer(ss)
    conns.append(ss)
time.sleep(float(sys.argv[5]))
metrics = urllib.request.urlopen(sys.argv[4]).read().decode()
print(re.search(r"^braid_loop_fibers (\S+)", metrics, re.M).group(1), end=" ")
for ss in conns:
    ss.sendall(b"GET /s.txt HTTP/1.1\r\nHost: a.test\r\n\r\n")
print(sum(answer(ss) for ss in conns))
|}

(* TLS connections idle after a request wait with no fiber (they each
   kept one before): beyond 32 waiting in fibers at once, and the others
   once the sweeper has seen them idle twice. Each is served again. *)
let idle_without_fibers () =
  with_metrics_server @@ fun s ->
  let before = gauge s "braid_loop_fibers" in
  let code, out =
    run
      [
        "python3";
        "-c";
        py_idle_after_request;
        string_of_int s.https;
        ca ();
        "60";
        Printf.sprintf "http://127.0.0.1:%d/metrics" s.http;
        "3";
      ]
  in
  Alcotest.(check int) ("python: " ^ out) 0 code;
  match Scanf.sscanf_opt out "%f %d" (fun f n -> (int_of_float f, n)) with
  | Some (during, served) ->
      if during - before >= 10 then
        Alcotest.failf "60 idle TLS connections: %d fibers, %d before" during
          before;
      Alcotest.(check int) "each served again" 60 served
  | None -> Alcotest.failf "python: %s" out

(* A client that sends its ClientHello, reads the server's answer, waits
   [argv.(3)] seconds, then finishes its handshake and asks (Python's ssl
   over memory buffers, so that it can pause half-way). *)
let py_half_handshake =
  {|
import socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[2])
ctx.check_hostname = False
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
tls = ctx.wrap_bio(inc, out, server_hostname="a.test")
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(10)
try:
    tls.do_handshake()
except ssl.SSLWantReadError:
    pass
s.sendall(out.read())
while True:
    inc.write(s.recv(65536))
    try:
        tls.do_handshake()
        break
    except ssl.SSLWantReadError:
        pass
time.sleep(float(sys.argv[3]))
s.sendall(out.read())
tls.write(b"GET /s.txt HTTP/1.1\r\nHost: a.test\r\n\r\n")
s.sendall(out.read())
r = b""
while b"small\n" not in r:
    d = s.recv(65536)
    if not d:
        sys.exit("closed after %r" % r)
    inc.write(d)
    try:
        r += tls.read(65536)
    except ssl.SSLWantReadError:
        pass
print(r.split(b"\r\n")[0].decode())
|}

(* A connection whose client pauses before its last handshake message
   finishes its handshake and is served, with no failed handshake counted.
   The pause (3 s) is long enough for the sweeper to see it waiting twice
   and interrupt the handshake's wait with [Unwind.Park], the path this
   guards; the test does not check that the interruption happened (it
   passes without it too), only that it loses nothing. *)
let parked_in_handshake () =
  with_metrics_server @@ fun s ->
  let failed = handshakes s "failed" in
  let code, out =
    run
      [ "python3"; "-c"; py_half_handshake; string_of_int s.https; ca (); "3" ]
  in
  Alcotest.(check (pair int string))
    "served after the pause" (0, "HTTP/1.1 200 OK\n") (code, out);
  Alcotest.(check int) "no failed handshake" failed (handshakes s "failed")

(* Plain HTTP sent to the TLS port is answered 400 with a page saying so,
   as nginx does (it was reset by the failed handshake), counted as a failed
   handshake; the server goes on. *)
let plain_http_on_tls () =
  with_metrics_server @@ fun s ->
  let failed = handshakes s "failed" in
  let code, out =
    curl
      [
        "-i";
        "--data-binary";
        "a body";
        Printf.sprintf "http://127.0.0.1:%d/s.txt" s.https;
      ]
  in
  Alcotest.(check int) ("curl: " ^ out) 0 code;
  check_contains "the status" out "HTTP/1.1 400 Bad Request";
  check_contains "the page" out "plain HTTP request sent to the HTTPS port";
  wait_until "the failed handshake counted" (fun () ->
      handshakes s "failed" = failed + 1);
  let code, body = curl_https s.https "/s.txt" in
  Alcotest.(check (pair int string)) "HTTPS after" (0, "small\n") (code, body)

(* KNOWN BUG (not run by default, see [known_bugs]), a regression of
   536aa8a (the handshake inside the pipeline's first wait): a client that
   sends an incomplete TLS record (3 bytes of a record header, half a
   ClientHello, a ClientHello trickled) before stalling is never closed by
   the header timeout; a keep-alive connection that sends 3 bytes of a
   record header is never closed by the keep-alive timeout (that one
   predates 536aa8a). The sweeper (lib/server/connection.ml, [sweep])
   spares an expired idle connection while [l.pending ()] is true ("a
   request arrived in time"), and [serve_tls] passes [~pending:(fun () ->
   Tls.pending tls || input_waiting socket ())], where [Tls.pending] is
   SSL_has_pending (lib/tls/tls_stubs.c), true while OpenSSL holds
   unprocessed bytes of an incomplete record: for ever, if the client
   sends no more. A 5-byte record header alone is closed in time (OpenSSL
   has consumed it, nothing is left pending). Fix: for the sweeper, count
   only decrypted application bytes (SSL_pending(ssl) > 0) and the
   kernel's (input_waiting), not an incomplete record. *)
let incomplete_records () =
  handshake_timeout
    ~which:[ "3 bytes of a record header"; "half a ClientHello" ]
    ~trickle:true ()

(* Bugs these tests found, fixed since: a partial record held by OpenSSL
   kept a slowloris alive; the redirect refused a POST's body; an unpaired
   certificate was blamed on the HTTPS port. *)
let found_bugs =
  [
    Alcotest.test_case "incomplete records in the handshake" `Quick
      incomplete_records;
    Alcotest.test_case "an incomplete record on a kept-alive connection" `Quick
      keep_alive_partial_record;
    Alcotest.test_case "redirect: POST with a body" `Quick redirect_post;
    Alcotest.test_case "unpaired certificate and key named" `Quick
      unpaired_files;
  ]

let () =
  Sys.set_signal Sys.sigpipe Signal_ignore;
  Test_support.Watchdog.start ~seconds:120. "test_https";
  Alcotest.run "https"
    ([
       ( "protocol",
         [
           Alcotest.test_case "TLS 1.3, 1.2, ALPN, plain beside" `Quick
             versions_and_alpn;
           Alcotest.test_case "TLS 1.0 and 1.1 refused" `Quick
             old_versions_refused;
           Alcotest.test_case "SNI" `Quick sni;
           Alcotest.test_case "session resumption" `Quick resumption;
           Alcotest.test_case "kept alive, parked, served" `Quick parked;
           Alcotest.test_case "handshake timeout: silent" `Quick
             (handshake_timeout ~which:[ "silent" ] ~trickle:false);
           Alcotest.test_case "silent clients hold no fiber" `Quick
             silent_without_fibers;
           Alcotest.test_case "idle clients hold no fiber" `Quick
             idle_without_fibers;
           Alcotest.test_case "parked half-way through a handshake" `Quick
             parked_in_handshake;
           Alcotest.test_case "plain HTTP on the TLS port: 400" `Quick
             plain_http_on_tls;
           Alcotest.test_case "closed at once when the client asked" `Quick
             close_as_asked;
         ] );
       ( "operations",
         [
           Alcotest.test_case "certificates reloaded" `Quick reload_certificates;
           Alcotest.test_case "reloads under load" `Quick reload_under_load;
           Alcotest.test_case "binary upgrades under load" `Quick
             upgrade_under_load;
           Alcotest.test_case "redirect to HTTPS" `Quick redirect;
           Alcotest.test_case "bad certificates at start" `Quick bad_start;
           Alcotest.test_case "configuration file" `Quick config_file;
           Alcotest.test_case "HttpsRedirect and TlsListen reloaded" `Quick
             reload_redirect;
           Alcotest.test_case "silent plain clients evicted (control)" `Quick
             (silent_clients ~on_tls:false ~evict:true);
           Alcotest.test_case "silent TLS clients evicted" `Quick
             (silent_clients ~on_tls:true ~evict:true);
           Alcotest.test_case "silent plain clients drained (control)" `Quick
             (silent_clients ~on_tls:false ~evict:false);
           Alcotest.test_case "silent TLS clients drained" `Quick
             (silent_clients ~on_tls:true ~evict:false);
         ] );
     ]
    @ [ ("found bugs", found_bugs) ])
