(* The program on real sockets, as a child process: HTTP and HTTPS (its
   development certificate, checked by curl), each request logged at Info,
   and a graceful stop on SIGTERM that lets a request in progress finish. *)

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

(* The server listens a moment after it printed its certificate. *)
let wait_for port =
  let deadline = Unix.gettimeofday () +. 10. in
  let rec attempt () =
    let s = Unix.socket PF_INET SOCK_STREAM 0 in
    match Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port)) with
    | () -> Unix.close s
    | exception Unix.Unix_error (ECONNREFUSED, _, _)
      when Unix.gettimeofday () < deadline ->
        Unix.close s;
        Unix.sleepf 0.02;
        attempt ()
  in
  attempt ()

let request port text =
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Unix.setsockopt_float s SO_RCVTIMEO 10.;
  Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port));
  ignore (Unix.write_substring s text 0 (String.length text));
  s

(* Two ports free now: both bound at once, so they differ. *)
let two_free_ports () =
  let bound () =
    let s = Unix.socket PF_INET SOCK_STREAM 0 in
    Unix.bind s (ADDR_INET (Unix.inet_addr_loopback, 0));
    s
  in
  let port s =
    match Unix.getsockname s with ADDR_INET (_, p) -> p | _ -> assert false
  in
  let a = bound () and b = bound () in
  let ports = (port a, port b) in
  Unix.close a;
  Unix.close b;
  ports

let () =
  let data = Filename.temp_dir "todo" "" in
  let err = Filename.temp_file "todo" ".err" in
  let port, https = two_free_ports () in
  let out_r, out_w = Unix.pipe ~cloexec:true () in
  let err_fd = Unix.openfile err [ O_WRONLY; O_TRUNC; O_CLOEXEC ] 0o600 in
  let pid =
    Unix.create_process "./main.exe"
      [|
        "main.exe";
        "--port";
        string_of_int port;
        "--https-port";
        string_of_int https;
        "--data";
        data;
      |]
      Unix.stdin out_w err_fd
  in
  Unix.close out_w;
  Unix.close err_fd;
  let out = Unix.in_channel_of_descr out_r in
  let certificate =
    Scanf.sscanf (input_line out) "todo: HTTPS with %s" Fun.id
  in
  wait_for port;
  let s =
    request port "GET /login HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
  in
  let r = read_all s in
  Unix.close s;
  assert (contains r "HTTP/1.1 200 OK" && contains r {|name="csrf_token"|});
  let curl =
    Printf.sprintf
      "curl -sS -o /dev/null -w '%%{http_code}' --cacert %s \
       https://localhost:%d/login"
      (Filename.quote certificate)
      https
  in
  let ic = Unix.open_process_in curl in
  let code = In_channel.input_all ic in
  assert (Unix.close_process_in ic = WEXITED 0 && code = "200");
  (* A form whose body is still to come when the signal arrives: read and
     answered (a 403: no CSRF token) before the server stops. *)
  let body = "username=ada&password=x" in
  let late =
    request port
      (Printf.sprintf
         "POST /signup HTTP/1.1\r\n\
          Host: t\r\n\
          Content-Type: application/x-www-form-urlencoded\r\n\
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
  assert (contains r "HTTP/1.1 403" && contains r "Connection: close");
  (match waitpid pid with
  | WEXITED 0 -> ()
  | _ -> failwith "the server did not exit with 0");
  let log = In_channel.with_open_bin err In_channel.input_all in
  Sys.remove err;
  ignore (Sys.command ("rm -rf " ^ Filename.quote data));
  assert (contains log {|"GET /login HTTP/1.1" 200|});
  assert (contains log {|"POST /signup HTTP/1.1" 403|});
  print_endline
    "serve: HTTP and HTTPS, access log at Info, graceful SIGTERM: ok"
