type t = Unix.file_descr list

let request path =
  Printf.sprintf "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" path

let rec write_all fd s off =
  if off < String.length s then
    write_all fd s (off + Unix.write_substring fd s off (String.length s - off))

let index_of ~sub s =
  let n = String.length sub and m = String.length s in
  let rec at i =
    if i + n > m then None
    else if String.sub s i n = sub then Some i
    else at (i + 1)
  in
  at 0

(* Reads one response whole: its head, then as many body bytes as it
   announces. *)
let read_response fd =
  let chunk = Bytes.create 4096 and received = Buffer.create 2048 in
  let read_more () =
    match Unix.read fd chunk 0 (Bytes.length chunk) with
    | 0 -> failwith "the server closed the connection before its response"
    | n -> Buffer.add_subbytes received chunk 0 n
  in
  let rec head () =
    match index_of ~sub:"\r\n\r\n" (Buffer.contents received) with
    | Some i -> i + 4
    | None ->
        read_more ();
        head ()
  in
  let head_length = head () in
  let head = Buffer.sub received 0 head_length in
  let status = if String.length head >= 12 then String.sub head 9 3 else "" in
  if status <> "200" then
    failwith ("status " ^ status ^ " instead of 200: " ^ String.escaped head);
  match Bench_harness.content_length head with
  | None -> failwith ("no Content-Length: " ^ String.escaped head)
  | Some body ->
      while Buffer.length received < head_length + body do
        read_more ()
      done;
      if Buffer.length received > head_length + body then
        failwith "more bytes than the response announced"

let close fds =
  List.iter (fun fd -> try Unix.close fd with Unix.Unix_error _ -> ()) fds

(* In batches: a batch's connections are made (the kernel completes them
   into the listen queue, well below its length), then its requests sent,
   then its responses read, so the server serves a batch at a time instead
   of waiting for the client between connections. *)
let batch = 200
let timeout = 10.

let open_with ~kind ~opening ~read_response ~port ~count =
  let request = opening in
  let address = Unix.ADDR_INET (Unix.inet_addr_loopback, port) in
  let opened = ref [] in
  let step what i f =
    try f ()
    with (Failure _ | Unix.Unix_error _) as e ->
      close !opened;
      failwith
        (Printf.sprintf "%s %d of %d to port %d failed (%s): %s" kind (i + 1)
           count port what
           (match e with
           | Unix.Unix_error (err, op, _) -> op ^ ": " ^ Unix.error_message err
           | Failure msg -> msg
           | e -> Printexc.to_string e))
  in
  let rec go first =
    if first < count then (
      let n = min batch (count - first) in
      let fds =
        List.init n (fun j ->
            step "connect" (first + j) (fun () ->
                let fd = Unix.socket PF_INET SOCK_STREAM 0 in
                opened := fd :: !opened;
                (* A server that stops accepting or answering fails the
                   run instead of hanging it (Linux applies the send
                   timeout to connect too). *)
                Unix.setsockopt_float fd SO_RCVTIMEO timeout;
                Unix.setsockopt_float fd SO_SNDTIMEO timeout;
                Unix.connect fd address;
                fd))
      in
      List.iteri
        (fun j fd ->
          step "request" (first + j) (fun () -> write_all fd request 0))
        fds;
      List.iteri
        (fun j fd -> step "response" (first + j) (fun () -> read_response fd))
        fds;
      go (first + n))
  in
  go 0;
  !opened

let open_idle ~port ~path ~count =
  open_with ~kind:"connection" ~opening:(request path) ~read_response ~port
    ~count

(* A peek that would block means the connection is open and quiet; 0 bytes
   (end of stream) or an error means the server closed it. *)
let closed_by_server fds =
  let byte = Bytes.create 1 in
  List.fold_left
    (fun closed fd ->
      Unix.set_nonblock fd;
      let is_closed =
        match Unix.recv fd byte 0 1 [ MSG_PEEK ] with
        | 0 -> true
        | _ -> false
        (* it sent something unasked (an HTTP/2 PING or GOAWAY, say): open,
           if odd; a GOAWAY is followed by a close, which a later look sees *)
        | exception Unix.Unix_error ((EAGAIN | EWOULDBLOCK), _, _) -> false
        | exception Unix.Unix_error _ -> true
      in
      Unix.clear_nonblock fd;
      if is_closed then closed + 1 else closed)
    0 fds

let rss_per_connection ~label ~rss ~open_idle ~warm_up ~count =
  match
    close (open_idle ~count:warm_up);
    Unix.sleepf 2.5;
    let before = rss () in
    let clients = open_idle ~count in
    Fun.protect
      ~finally:(fun () -> close clients)
      (fun () ->
        Unix.sleepf 2.5;
        let after = rss () in
        match closed_by_server clients with
        | 0 -> Ok ((after -. before) /. float count)
        | n ->
            Error
              (Printf.sprintf "%s closed %d of the %d idle connections" label n
                 count))
  with
  | result -> result
  | exception Failure msg -> Error msg
