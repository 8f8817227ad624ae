module Fd = Braid_io.Fd
module Net = Braid_io.Net

external eproto : unit -> Unix.error = "braid_tls_eproto"

let eproto = eproto ()

(* A TLS failure is braid.io's error with EPROTO and OpenSSL's reason. *)
let tls_failure op reason =
  raise (Braid_io.Io_error { op; error = eproto; detail = reason })

let closed op =
  raise (Braid_io.Io_error { op; error = Unix.EBADF; detail = "" })

type t = {
  socket : Net.socket;
  ssl : Ssl.socket;
  (* False once a fatal error or our close_notify: OpenSSL must then not be
     asked to read, write or shut down again. *)
  mutable healthy : bool;
  (* True once the peer ended its stream (close_notify, or the socket
     closed): reads return 0, but writing (an answer to a half-closed
     request) and our close_notify remain possible. *)
  mutable input_ended : bool;
  mutable released : bool;
  (* The handshake's step (SSL_accept or SSL_connect) until it completes,
     then [None]. A server's connection may run it at its first read. *)
  mutable handshake : (Ssl.socket -> unit) option;
  on_handshake : t -> unit;
}

external has_pending : Ssl.socket -> bool = "braid_tls_has_pending"

external attach_reader : Ssl.socket -> bytes -> int -> int -> unit
  = "braid_tls_attach_reader"

external recv : Unix.file_descr -> bytes -> int -> int -> int = "braid_tls_recv"
external session_reused : Ssl.socket -> bool = "braid_tls_session_reused"
external server_name : Ssl.socket -> string option = "braid_tls_server_name"
external release : Ssl.socket -> unit = "braid_tls_release"
external take_errors : unit -> string = "braid_tls_take_errors"

(* What an operation that did not complete asks for. *)
type stalled = Wants_input | Wants_output | Ended | Failed of string

let stalled t (error : Ssl.ssl_error) =
  match error with
  | Error_want_read -> Wants_input
  | Error_want_write -> Wants_output
  | Error_zero_return ->
      t.input_ended <- true;
      Ended
  | Error_syscall -> (
      (* An empty queue: the socket ended (or was reset) under OpenSSL. *)
      match take_errors () with
      | "" ->
          t.input_ended <- true;
          Ended
      | reason ->
          t.healthy <- false;
          Failed reason)
  | Error_ssl ->
      t.healthy <- false;
      Failed (match take_errors () with "" -> "protocol error" | r -> r)
  | _ ->
      t.healthy <- false;
      ignore (take_errors ());
      Failed "unexpected OpenSSL state"

let usable t ~op =
  if t.released then invalid_arg ("Braid_tls.Connection." ^ op ^ ": closed");
  if not (Fd.is_open t.socket) then closed op

(* Callers check [usable] once on entry; after a wait the connection may
   have been closed by another fiber, so it is checked again before OpenSSL
   is called. The TLS loops below wait here, not through braid.io's one
   retry loop ([Handle.nonblocking], internal): which readiness to wait for
   is OpenSSL's answer to each attempt (a read may need to write, during a
   renegotiation or a handshake, and a write to read), its failures come
   from OpenSSL's error queue rather than errno, and what must still hold
   after a wake-up is the TLS state's health as well as the socket's. *)
let wait t ~op = function
  | Wants_input ->
      Fd.read_would_block t.socket;
      Fd.await_readable t.socket;
      usable t ~op
  | Wants_output ->
      Fd.await_writable t.socket;
      usable t ~op
  | Ended | Failed _ -> assert false

(* Each step may do a public-key operation (0.1 to 0.5 ms of CPU): it waits
   behind the loop's other work first, so that a flood of handshakes delays
   the requests of established connections by a few steps at each turn of the
   loop rather than by all of them (Braid_io.yield_background). The socket
   may have been closed meanwhile. *)
let rec handshake t ~op step =
  Braid_io.yield_background ();
  usable t ~op;
  match step t.ssl with
  | () -> ()
  | exception (Ssl.Accept_error error | Ssl.Connection_error error) -> (
      match stalled t error with
      | (Wants_input | Wants_output) as w ->
          wait t ~op w;
          handshake t ~op step
      | Ended ->
          (* Whatever the reason (the peer gone, a protocol error), the
             session never started: no close_notify is owed. *)
          t.healthy <- false;
          tls_failure op "connection closed by the peer"
      | Failed reason ->
          t.healthy <- false;
          tls_failure op reason)

let create socket context ~on_handshake step =
  if not (Fd.is_open socket) then closed "handshake";
  let ssl = Ssl.embed_socket (Fd.to_unix socket) context in
  {
    socket;
    ssl;
    healthy = true;
    input_ended = false;
    released = false;
    handshake = Some step;
    on_handshake;
  }

let run_handshake t =
  match t.handshake with
  | None -> ()
  | Some step ->
      handshake t ~op:"handshake" step;
      t.handshake <- None;
      t.on_handshake t

let start t prepare =
  match
    prepare t.ssl;
    run_handshake t
  with
  | () -> t
  | exception e ->
      let bt = Printexc.get_raw_backtrace () in
      t.released <- true;
      release t.ssl;
      Printexc.raise_with_backtrace e bt

(* A server reads through the stub's reader (tls_stubs.c): the bytes the
   caller received first, then the socket in blocks, rather than record by
   record. *)
let server ?(on_handshake = ignore) ?received context socket =
  let t =
    create socket
      (Server_context.default context)
      ~on_handshake Ssl.Runtime_lock.accept
  in
  (match
     match received with
     | Some (buf, off, len) ->
         if off < 0 || len < 0 || off > Bytes.length buf - len then
           invalid_arg "Braid_tls.Connection.server: invalid range";
         attach_reader t.ssl buf off len
     | None -> attach_reader t.ssl Bytes.empty 0 0
   with
  | () -> ()
  | exception e ->
      t.released <- true;
      release t.ssl;
      raise e);
  t

let receive_first socket buf off len =
  if off < 0 || len <= 0 || off > Bytes.length buf - len then
    invalid_arg "Braid_tls.Connection.receive_first: invalid range";
  if not (Fd.is_open socket) then `Ended
  else
    match recv (Fd.to_unix socket) buf off len with
    | -1 ->
        Fd.read_would_block socket;
        `Nothing
    | 0 | -2 -> `Ended
    | n -> `Received n

let accept context socket = start (server context socket) ignore

let handshake t =
  usable t ~op:"handshake";
  run_handshake t

let handshaken t = Option.is_none t.handshake

let is_ip_literal host =
  match Unix.inet_addr_of_string host with
  | _ -> true
  | exception Failure _ -> false

let connect ?host context socket =
  let prepare ssl =
    Option.iter
      (fun host ->
        if not (is_ip_literal host) then Ssl.set_client_SNI_hostname ssl host;
        if Client_context.verifies context then
          if is_ip_literal host then Ssl.set_ip ssl host
          else Ssl.set_host ssl host)
      host;
    match Client_context.alpn context with
    | [] -> ()
    | protocols -> Ssl.set_alpn_protos ssl protocols
  in
  start
    (create socket
       (Client_context.context context)
       ~on_handshake:ignore Ssl.Runtime_lock.connect)
    prepare

let check_range name buf off len =
  if off < 0 || len < 0 || off > Bytes.length buf - len then
    invalid_arg ("Braid_tls.Connection." ^ name ^ ": invalid range")

let rec read t buf off len =
  if t.input_ended || not t.healthy then 0
  else
    match Ssl.Runtime_lock.read t.ssl buf off len with
    | n -> n
    | exception Ssl.Read_error error -> (
        match stalled t error with
        | (Wants_input | Wants_output) as w ->
            wait t ~op:"read" w;
            read t buf off len
        | Ended -> 0
        | Failed reason -> tls_failure "read" reason)

let read_into t buf off len =
  check_range "read_into" buf off len;
  if len = 0 then 0
  else (
    usable t ~op:"read";
    run_handshake t;
    Fd.spend t.socket;
    read t buf off len)

let rec write t buf off len =
  if len > 0 then (
    if not t.healthy then tls_failure "write" "connection already ended";
    match Ssl.Runtime_lock.write t.ssl buf off len with
    | n -> write t buf (off + n) (len - n)
    | exception Ssl.Write_error error -> (
        match stalled t error with
        | (Wants_input | Wants_output) as w ->
            wait t ~op:"write" w;
            write t buf off len
        | Ended -> tls_failure "write" "connection closed by the peer"
        | Failed reason -> tls_failure "write" reason))

let write_all t buf off len =
  check_range "write_all" buf off len;
  if len > 0 then (
    usable t ~op:"write";
    run_handshake t;
    Fd.spend t.socket;
    write t buf off len)

(* OpenSSL only reads the bytes. *)
let write_string t s =
  write_all t (Bytes.unsafe_of_string s) 0 (String.length s)

external decrypted : Ssl.socket -> int = "braid_tls_pending"

let pending t = (not t.released) && decrypted t.ssl > 0
let buffered t = (not t.released) && has_pending t.ssl

let await_input t =
  usable t ~op:"await_input";
  if not (handshaken t) then (
    (* The handshake's bytes first, then the data's: the caller holds no
       buffer meanwhile. *)
    Fd.await_input t.socket;
    run_handshake t);
  if not (has_pending t.ssl) then Fd.await_input t.socket

let close t =
  if not t.released then (
    if t.healthy && handshaken t && Fd.is_open t.socket then (
      t.healthy <- false;
      match Ssl.Runtime_lock.close_notify t.ssl with
      | (_ : bool) -> ()
      | exception Ssl.Connection_error _ ->
          (* The alert is a courtesy (HTTP/1.1 frames its messages itself):
             a full socket or a vanished peer loses nothing. *)
          ignore (take_errors ()));
    t.released <- true;
    release t.ssl)

let socket t = t.socket

let live t ~op =
  if t.released then invalid_arg ("Braid_tls.Connection." ^ op ^ ": closed");
  t.ssl

let version t =
  match Ssl.version (live t ~op:"version") with
  | TLSv1_3 -> "TLSv1.3"
  | TLSv1_2 -> "TLSv1.2"
  | _ -> "older"

let cipher t = Ssl.get_cipher_name (Ssl.get_cipher (live t ~op:"cipher"))
let alpn t = Ssl.get_negotiated_alpn_protocol (live t ~op:"alpn")
let server_name t = server_name (live t ~op:"server_name")
let resumed t = session_reused (live t ~op:"resumed")
