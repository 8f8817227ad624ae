(* TLS on Braid sockets: handshakes, data both ways, ALPN, SNI, verification,
   failures, cancellation, the end of a stream. *)

open Braid_io
module Tls = Braid_tls.Connection
module Server_context = Braid_tls.Server_context
module Client_context = Braid_tls.Client_context

(* {1 Certificates, made once per run by the openssl command} *)

let dir =
  let d = Filename.temp_dir "braid-tls-test" "" in
  at_exit (fun () -> ignore (Sys.command ("rm -rf " ^ Filename.quote d)));
  d

let path name = Filename.concat dir name

let openssl args =
  let command = "openssl " ^ args ^ " >/dev/null 2>&1" in
  if Sys.command command <> 0 then failwith ("failed: " ^ command)

let ec_key name =
  openssl
    (Printf.sprintf "ecparam -name prime256v1 -genkey -noout -out %s"
       (path name))

(* A CA, and a leaf for [names] signed by it. *)
let make_ca name =
  ec_key (name ^ ".key");
  openssl
    (Printf.sprintf
       "req -x509 -new -key %s -out %s -days 2 -subj /CN=%s -addext \
        basicConstraints=critical,CA:TRUE -addext \
        keyUsage=critical,keyCertSign"
       (path (name ^ ".key"))
       (path (name ^ ".pem"))
       name)

let make_leaf ~ca name names =
  ec_key (name ^ ".key");
  let san = String.concat "," (List.map (fun n -> "DNS:" ^ n) names) in
  let ext = path (name ^ ".ext") in
  Out_channel.with_open_text ext (fun oc ->
      Printf.fprintf oc "subjectAltName=%s\n" san);
  openssl
    (Printf.sprintf "req -new -key %s -out %s -subj /CN=%s"
       (path (name ^ ".key"))
       (path (name ^ ".csr"))
       (List.hd names));
  openssl
    (Printf.sprintf
       "x509 -req -in %s -CA %s -CAkey %s -CAcreateserial -out %s -days 2 \
        -extfile %s"
       (path (name ^ ".csr"))
       (path (ca ^ ".pem"))
       (path (ca ^ ".key"))
       (path (name ^ ".pem"))
       ext)

let () =
  make_ca "ca";
  make_ca "other-ca";
  make_leaf ~ca:"ca" "a" [ "a.test" ];
  make_leaf ~ca:"ca" "b" [ "b.test"; "*.b.test" ]

let certificate name =
  { Server_context.chain = path (name ^ ".pem"); key = path (name ^ ".key") }

let server_context names =
  match Server_context.load (List.map certificate names) with
  | Ok c -> c
  | Error e -> Alcotest.fail e

let client_context ?(ca = "ca") ?alpn () =
  match Client_context.create ~ca_file:(path (ca ^ ".pem")) ?alpn () with
  | Ok c -> c
  | Error e -> Alcotest.fail e

(* {1 Harness} *)

let loopback = Net.tcp "127.0.0.1" 0

let within name f =
  match Time.timeout 30. f with
  | Some v -> v
  | None -> Alcotest.failf "%s: still running after 30 s" name

(* [serve conn] runs on the server's side of one accepted TLS connection,
   [client sw socket] on a client connected to it; the server's outcome
   (or its exception) is returned with the client's. *)
let pair ?(names = [ "a" ]) ~serve client =
  Switch.run @@ fun sw ->
  let context = server_context names in
  let listener = Net.listen ~sw loopback in
  (* The server's failure is a result to check, not the switch's. *)
  let server =
    Fiber.fork ~sw (fun () ->
        match
          let socket, _ = Net.accept ~sw listener in
          let conn = Tls.accept context socket in
          Fun.protect ~finally:(fun () -> Tls.close conn) (fun () -> serve conn)
        with
        | v -> Ok v
        | exception e -> Error e)
  in
  let socket = Net.connect ~sw (Net.local_addr listener) in
  let client_result = client sw socket in
  let server_result = Fiber.join server in
  (client_result, server_result)

let read_all conn =
  let b = Buffer.create 4096 and buf = Bytes.create 16384 in
  let rec go () =
    match Tls.read_into conn buf 0 (Bytes.length buf) with
    | 0 -> Buffer.contents b
    | n ->
        Buffer.add_subbytes b buf 0 n;
        go ()
  in
  go ()

let contains text fragment =
  let n = String.length fragment in
  let rec at i =
    i + n <= String.length text && (String.sub text i n = fragment || at (i + 1))
  in
  at 0

let megabyte = String.init (1 lsl 20) (fun i -> Char.chr (i * 7 land 255))

(* {1 Tests} *)

(* A megabyte each way at once: the server echoes as it reads, the client
   writes from one fiber while another reads, so both sockets fill. *)
let round_trip () =
  Braid_io.run @@ fun () ->
  within "round trip" @@ fun () ->
  let echoed, served =
    pair
      ~serve:(fun conn ->
        let buf = Bytes.create 65536 in
        let rec echo total =
          match Tls.read_into conn buf 0 (Bytes.length buf) with
          | 0 -> total
          | n ->
              Tls.write_all conn buf 0 n;
              echo (total + n)
        in
        let total = echo 0 in
        (total, Tls.version conn, Tls.alpn conn, Tls.server_name conn))
      (fun sw socket ->
        let conn =
          Tls.connect ~host:"a.test"
            (client_context ~alpn:[ "h2"; "http/1.1" ] ())
            socket
        in
        Alcotest.(check string) "version" "TLSv1.3" (Tls.version conn);
        Alcotest.(check (option string))
          "ALPN: http/1.1 of h2 and http/1.1" (Some "http/1.1") (Tls.alpn conn);
        Alcotest.(check bool) "a full handshake" false (Tls.resumed conn);
        let writer =
          Fiber.fork ~sw (fun () ->
              Tls.write_string conn megabyte;
              (* Half-close: the server's read ends, and it answers the end. *)
              Net.shutdown socket Unix.SHUTDOWN_SEND)
        in
        let back = read_all conn in
        Fiber.join writer;
        Tls.close conn;
        back)
  in
  Alcotest.(check int)
    "echoed length" (String.length megabyte) (String.length echoed);
  Alcotest.(check bool) "echoed bytes" true (String.equal megabyte echoed);
  match served with
  | Ok (total, version, alpn, name) ->
      Alcotest.(check int) "server read" (String.length megabyte) total;
      Alcotest.(check string) "server's version" "TLSv1.3" version;
      Alcotest.(check (option string)) "server's ALPN" (Some "http/1.1") alpn;
      Alcotest.(check (option string)) "SNI seen" (Some "a.test") name
  | Error e -> raise e

(* No protocol in common: no ALPN answer, and no failed handshake. *)
let alpn_unknown () =
  Braid_io.run @@ fun () ->
  within "alpn" @@ fun () ->
  let alpn, _ =
    pair
      ~serve:(fun conn -> ignore (read_all conn))
      (fun _ socket ->
        let conn =
          Tls.connect ~host:"a.test" (client_context ~alpn:[ "h2" ] ()) socket
        in
        let alpn = Tls.alpn conn in
        Tls.close conn;
        alpn)
  in
  Alcotest.(check (option string)) "no protocol agreed" None alpn

(* The certificate follows the name asked for, wildcards included; an
   unknown name gets the first, which a verifying client then refuses. *)
let sni () =
  Braid_io.run @@ fun () ->
  within "sni" @@ fun () ->
  let connect host =
    fst
      (pair ~names:[ "a"; "b" ]
         ~serve:(fun conn -> ignore (read_all conn))
         (fun _ socket ->
           match Tls.connect ~host (client_context ()) socket with
           | conn ->
               Tls.close conn;
               Ok ()
           | exception Io_error { error; detail = reason; _ }
             when error = Braid_tls.eproto ->
               Error reason))
  in
  Alcotest.(check (result unit string)) "a.test" (Ok ()) (connect "a.test");
  Alcotest.(check (result unit string)) "b.test" (Ok ()) (connect "b.test");
  Alcotest.(check (result unit string))
    "x.b.test (a wildcard)" (Ok ()) (connect "x.b.test");
  match connect "c.test" with
  | Ok () -> Alcotest.fail "c.test verified against a certificate for a.test"
  | Error reason ->
      Alcotest.(check bool)
        ("c.test refused: " ^ reason)
        true
        (String.length reason > 0)

(* A client that trusts another CA fails its handshake with a reason; the
   server's handshake fails too (the client's alert), and neither hangs. *)
let untrusted () =
  Braid_io.run @@ fun () ->
  within "untrusted" @@ fun () ->
  let client, server =
    pair
      ~serve:(fun _ -> ())
      (fun _ socket ->
        match
          Tls.connect ~host:"a.test" (client_context ~ca:"other-ca" ()) socket
        with
        | _ -> Ok ()
        | exception Io_error { op; error; detail = reason }
          when error = Braid_tls.eproto ->
            Error (op, reason))
  in
  (match client with
  | Ok () -> Alcotest.fail "an untrusted certificate was accepted"
  | Error (op, reason) ->
      Alcotest.(check string) "op" "handshake" op;
      Alcotest.(check string)
        "a TLS failure's error is EPROTO" "Protocol error"
        (Unix.error_message Braid_tls.eproto);
      Alcotest.(check bool)
        ("names the verification: " ^ reason)
        true
        (contains reason "certificate"));
  match server with
  | Error (Io_error { op = "handshake"; error; _ })
    when error = Braid_tls.eproto ->
      ()
  | Error e -> Alcotest.failf "server: %s" (Printexc.to_string e)
  | Ok () -> Alcotest.fail "server: handshake succeeded"

(* Loading: each failure names its file and reason; nothing is loaded from
   a list with one bad certificate. *)
let load_errors () =
  let error_of certificates =
    match Server_context.load certificates with
    | Ok _ -> Alcotest.fail "loaded"
    | Error e -> e
  in
  let mentions what e fragment =
    Alcotest.(check bool) (what ^ ": " ^ e) true (contains e fragment)
  in
  mentions "no certificate" (error_of []) "no certificate";
  let missing = path "missing.pem" in
  mentions "missing file"
    (error_of [ { chain = missing; key = path "a.key" } ])
    missing;
  let garbage = path "garbage.pem" in
  Out_channel.with_open_text garbage (fun oc ->
      output_string oc "not a certificate\n");
  mentions "not a certificate"
    (error_of [ { chain = garbage; key = path "a.key" } ])
    garbage;
  mentions "key of another certificate"
    (error_of [ { chain = path "a.pem"; key = path "b.key" } ])
    (path "b.key");
  mentions "second one bad"
    (error_of [ certificate "a"; { chain = path "b.pem"; key = garbage } ])
    garbage;
  (match Server_context.load ~ciphers:"NO-SUCH-CIPHER" [ certificate "a" ] with
  | Ok _ -> Alcotest.fail "bad ciphers accepted"
  | Error e -> mentions "ciphers" e "NO-SUCH-CIPHER");
  match Server_context.load [ certificate "a"; certificate "b" ] with
  | Ok c ->
      Alcotest.(check int)
        "both kept" 2
        (List.length (Server_context.certificates c))
  | Error e -> Alcotest.fail e

(* A client that connects and never sends a ClientHello: cancelling the
   server's handshake wakes it at once, and the socket closes cleanly. *)
let cancel_handshake () =
  Braid_io.run @@ fun () ->
  within "cancel" @@ fun () ->
  Switch.run @@ fun sw ->
  let context = server_context [ "a" ] in
  let listener = Net.listen ~sw loopback in
  let silent = Net.connect ~sw (Net.local_addr listener) in
  let socket, _ = Net.accept ~sw listener in
  (match Time.timeout 0.2 (fun () -> Tls.accept context socket) with
  | None -> ()
  | Some _ -> Alcotest.fail "a handshake with a silent client finished");
  Net.close socket;
  (* The silent client sees the end of the stream. *)
  let buf = Bytes.create 16 in
  Alcotest.(check int) "closed" 0 (Net.read_into silent buf 0 16)

(* A ClientHello as Braid's client sends it: the client's first record,
   read off the other end of a socket pair; the client is then cancelled. *)
let client_hello () =
  Switch.run @@ fun sw ->
  let ours, theirs = Unix.socketpair Unix.PF_UNIX Unix.SOCK_STREAM 0 in
  let ours = Fd.of_unix ~sw ours and theirs = Fd.of_unix ~sw theirs in
  let client =
    Fiber.fork (fun () ->
        ignore (Tls.connect ~host:"a.test" (client_context ()) theirs))
  in
  let buf = Bytes.create 16384 in
  let rec read_until n got =
    if got < n then
      match Fd.read_into ours buf got (Bytes.length buf - got) with
      | 0 -> Alcotest.fail "the client closed before its ClientHello"
      | k -> read_until n (got + k)
    else got
  in
  let got = read_until 5 0 in
  let length = 5 + Bytes.get_uint16_be buf 3 in
  let got = read_until length got in
  Alcotest.(check int) "one record" length got;
  Fiber.cancel client;
  (match Fiber.join client with
  | () -> Alcotest.fail "a handshake without a server finished"
  | exception Braid.Cancelled -> ());
  Bytes.sub_string buf 0 length

(* A server that reads a connection's first bytes itself (to tell TLS from
   plain HTTP) gives them to [Tls.server]: OpenSSL takes them before the
   socket's. Seven bytes at an offset: the record header and the first two
   bytes of the ClientHello, which the rest on the socket must follow. *)
let first_bytes_given () =
  Braid_io.run @@ fun () ->
  within "first bytes given" @@ fun () ->
  Switch.run @@ fun sw ->
  let context = server_context [ "a" ] in
  let listener = Net.listen ~sw loopback in
  let server =
    Fiber.fork ~sw (fun () ->
        let socket, _ = Net.accept ~sw listener in
        let buf = Bytes.make 16 '.' in
        let rec first () =
          match Tls.receive_first socket buf 3 7 with
          | `Received n -> n
          | `Nothing ->
              Fd.await_input socket;
              first ()
          | `Ended -> Alcotest.fail "ended before its ClientHello"
        in
        let n = first () in
        let conn = Tls.server ~received:(buf, 3, n) context socket in
        Fun.protect
          ~finally:(fun () -> Tls.close conn)
          (fun () ->
            let got = Bytes.create 5 in
            let rec fill off =
              if off < 5 then
                match Tls.read_into conn got off (5 - off) with
                | 0 -> Alcotest.fail "the client ended early"
                | k -> fill (off + k)
            in
            fill 0;
            Tls.write_string conn "world";
            (n, Bytes.get buf 3, Bytes.to_string got)))
  in
  let socket = Net.connect ~sw (Net.local_addr listener) in
  let conn = Tls.connect ~host:"a.test" (client_context ()) socket in
  Tls.write_string conn "hello";
  let back = read_all conn in
  Tls.close conn;
  Alcotest.(check string) "the server's answer" "world" back;
  let n, first_byte, got = Fiber.join server in
  Alcotest.(check int) "7 bytes given" 7 n;
  Alcotest.(check char) "a handshake record" '\022' first_byte;
  Alcotest.(check string) "the client's bytes" "hello" got

(* A flood of handshakes does not hold up the loop's other work. [n]
   connections have sent their ClientHello when a request arrives on a plain
   one, which takes two turns of the loop (the server reads it and answers,
   the client reads the answer). The answer comes before the [n] handshakes
   have all done their first step (answered with their first flight): before
   handshake steps waited behind the other fibers, all [n] ran back to back
   in the first turn, ahead of the request. They all do it eventually. *)
let handshakes_wait_their_turn () =
  Braid_io.run @@ fun () ->
  within "flood" @@ fun () ->
  let hello = client_hello () in
  Switch.run @@ fun sw ->
  let context = server_context [ "a" ] in
  let n = 40 in
  let clients =
    List.init n (fun _ ->
        let client, server = Unix.socketpair Unix.PF_UNIX Unix.SOCK_STREAM 0 in
        Switch.on_release sw (fun () -> Unix.close client);
        let n = Unix.write_substring client hello 0 (String.length hello) in
        if n <> String.length hello then Alcotest.fail "a short ClientHello";
        (client, Fd.of_unix ~sw server))
  in
  let answered () =
    let ready, _, _ = Unix.select (List.map fst clients) [] [] 0. in
    List.length ready
  in
  let plain_client, plain_server =
    Unix.socketpair Unix.PF_UNIX Unix.SOCK_STREAM 0
  in
  let plain_client = Fd.of_unix ~sw plain_client
  and plain_server = Fd.of_unix ~sw plain_server in
  let handshakes =
    List.map
      (fun (_, socket) ->
        Fiber.fork ~sw (fun () ->
            match Tls.handshake (Tls.server context socket) with
            | () -> Alcotest.fail "a handshake finished without its client"
            | exception Io_error _ -> ()))
      clients
  in
  let _server : unit Fiber.handle =
    Fiber.fork ~sw (fun () ->
        let buf = Bytes.create 16 in
        ignore (Fd.read_into plain_server buf 0 16);
        Fd.write_string plain_server "answer")
  in
  Fd.write_string plain_client "request";
  let buf = Bytes.create 16 in
  let got = Fd.read_into plain_client buf 0 16 in
  Alcotest.(check string) "answered" "answer" (Bytes.sub_string buf 0 got);
  let first = answered () in
  Alcotest.(check bool)
    (Printf.sprintf "answered with %d of %d handshakes stepped" first n)
    true (first < n);
  while answered () < n do
    Time.sleep 0.001
  done;
  (* The clients leave: each handshake ends with the end of its stream. *)
  List.iter (fun (client, _) -> Unix.shutdown client Unix.SHUTDOWN_ALL) clients;
  List.iter Fiber.join handshakes

(* The end of a stream: a peer that closes its socket without close_notify
   (as HTTP clients do) reads as an end, not an error; after [close] (which
   sends close_notify) the peer reads an end too, and the closed connection
   refuses further use. *)
let end_of_stream () =
  Braid_io.run @@ fun () ->
  within "end of stream" @@ fun () ->
  let _, served =
    pair
      ~serve:(fun conn -> read_all conn)
      (fun _ socket ->
        let conn = Tls.connect ~host:"a.test" (client_context ()) socket in
        Tls.write_string conn "last words";
        (* No close_notify: the socket just ends. *)
        Net.shutdown socket Unix.SHUTDOWN_ALL)
  in
  (match served with
  | Ok text -> Alcotest.(check string) "read to the end" "last words" text
  | Error e -> raise e);
  let read_after_close, _ =
    pair
      ~serve:(fun conn ->
        Tls.write_string conn "bye";
        Tls.close conn)
      (fun _ socket ->
        let conn = Tls.connect ~host:"a.test" (client_context ()) socket in
        let text = read_all conn in
        Tls.close conn;
        let refused =
          match Tls.read_into conn (Bytes.create 1) 0 1 with
          | _ -> false
          | exception Invalid_argument _ -> true
        in
        (text, refused))
  in
  Alcotest.(check (pair string bool))
    "close_notify ends the peer's reads; a closed connection refuses use"
    ("bye", true) read_after_close

(* Old protocol versions are refused: openssl's own client, allowed TLS 1.0
   and 1.1 at security level 0, gets a protocol_version alert. With TLS 1.2
   it connects (so the refusal is the version's). *)
let old_versions () =
  Braid_io.run @@ fun () ->
  within "old versions" @@ fun () ->
  Switch.run @@ fun sw ->
  let context = server_context [ "a" ] in
  let listener = Net.listen ~sw loopback in
  let port =
    match Net.local_addr listener with
    | Unix.ADDR_INET (_, p) -> p
    | Unix.ADDR_UNIX _ -> assert false
  in
  let server =
    Fiber.fork ~sw (fun () ->
        Switch.run @@ fun sw ->
        while true do
          Net.accept_fork ~sw ~on_error:ignore listener (fun socket _ ->
              match Tls.accept context socket with
              | conn ->
                  Tls.write_string conn "hello\n";
                  Tls.close conn
              | exception Io_error _ -> ())
        done)
  in
  let s_client version =
    snd
      (Process.output "sh"
         [
           "-c";
           Printf.sprintf
             "openssl s_client -connect 127.0.0.1:%d %s -cipher \
              DEFAULT@SECLEVEL=0 -ign_eof </dev/null 2>&1"
             port version;
         ])
  in
  List.iter
    (fun version ->
      let out = s_client version in
      Alcotest.(check bool)
        (version ^ " refused") true
        (* The server's alert: a client that could not even offer the
           version ("no protocols available") would prove nothing. *)
        (contains out "alert protocol version"))
    [ "-tls1"; "-tls1_1" ];
  Alcotest.(check bool)
    "TLS 1.2 served" true
    (contains (s_client "-tls1_2") "hello");
  Fiber.cancel server

let () =
  Alcotest.run "tls"
    [
      ( "connections",
        [
          Alcotest.test_case "a megabyte each way" `Quick round_trip;
          Alcotest.test_case "ALPN without a common protocol" `Quick
            alpn_unknown;
          Alcotest.test_case "SNI picks the certificate" `Quick sni;
          Alcotest.test_case "an untrusted certificate" `Quick untrusted;
          Alcotest.test_case "cancelling a stalled handshake" `Quick
            cancel_handshake;
          Alcotest.test_case "end of stream, close_notify" `Quick end_of_stream;
          Alcotest.test_case "first bytes read by the server" `Quick
            first_bytes_given;
          Alcotest.test_case "handshakes wait behind other work" `Quick
            handshakes_wait_their_turn;
          Alcotest.test_case "TLS 1.0 and 1.1 refused" `Quick old_versions;
        ] );
      ("contexts", [ Alcotest.test_case "load errors" `Quick load_errors ]);
    ]
