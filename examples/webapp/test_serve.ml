(* The program in library mode, as braid serve behaves: it logs each
   request at Info and stops gracefully on SIGTERM, letting a request in
   progress finish. A child process on a real socket. *)

let contains s sub =
  let n = String.length sub in
  let rec go i =
    i + n <= String.length s && (String.sub s i n = sub || go (i + 1))
  in
  go 0

let rec waitpid pid =
  match Unix.waitpid [] pid with
  | _, status -> status
  | exception Unix.Unix_error (EINTR, _, _) -> waitpid pid

let read_all fd =
  let b = Buffer.create 1024 and chunk = Bytes.create 4096 in
  let rec go () =
    match Unix.read fd chunk 0 4096 with
    | 0 -> Buffer.contents b
    | n ->
        Buffer.add_subbytes b chunk 0 n;
        go ()
  in
  go ()

let request port text =
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Unix.setsockopt_float s SO_RCVTIMEO 10.;
  Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port));
  ignore (Unix.write_substring s text 0 (String.length text));
  s

let () =
  let err = Filename.temp_file "webapp" ".err" in
  let out_r, out_w = Unix.pipe ~cloexec:true () in
  let err_fd = Unix.openfile err [ O_WRONLY; O_TRUNC; O_CLOEXEC ] 0o600 in
  let pid =
    Unix.create_process "./main.exe"
      [| "main.exe"; "0"; "public" |]
      Unix.stdin out_w err_fd
  in
  Unix.close out_w;
  Unix.close err_fd;
  let out = Unix.in_channel_of_descr out_r in
  let port = Scanf.sscanf (input_line out) "webapp: port %d" Fun.id in
  (* A complete request, and one whose body is still to come when the
     signal arrives: it is served before the server stops. *)
  let s =
    request port
      "GET /hello/ada HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
  in
  let r = read_all s in
  Unix.close s;
  assert (contains r "HTTP/1.1 200 OK" && contains r "Hello, ada!");
  let body = {|{"text": "late"}|} in
  let late =
    request port
      (Printf.sprintf
         "POST /api/notes HTTP/1.1\r\n\
          Host: t\r\n\
          Content-Type: application/json\r\n\
          Content-Length: %d\r\n\
          \r\n"
         (String.length body))
  in
  (* Time for the server to accept it and read its head. *)
  Unix.sleepf 0.5;
  Unix.kill pid Sys.sigterm;
  Unix.sleepf 0.2;
  ignore (Unix.write_substring late body 0 (String.length body));
  let r = read_all late in
  Unix.close late;
  assert (contains r "HTTP/1.1 201" && contains r "Connection: close");
  (match waitpid pid with
  | WEXITED 0 -> ()
  | _ -> failwith "the server did not exit with 0");
  assert (input_line out = "webapp: stopped");
  let log = In_channel.with_open_bin err In_channel.input_all in
  Sys.remove err;
  assert (contains log {|"GET /hello/ada HTTP/1.1" 200 12|});
  assert (contains log {|"POST /api/notes HTTP/1.1" 201|});
  print_endline "serve: access log at Info, graceful SIGTERM: ok"
