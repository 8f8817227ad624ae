open Braid_io

type transport = Plain | Tls of Braid_tls.Connection.t

type t = {
  socket : Net.socket;
  transport : transport;
  input : Braid_http.Input.t;
  before_wait : (unit -> unit) ref;
      (** Called by a read that is about to wait for the socket. *)
  mutable closed : bool;
  mutable idle_since : int;
  mutable requests : int;
}

let read_with transport socket buf off len =
  match transport with
  | Plain -> Net.read_into socket buf off len
  | Tls c -> Braid_tls.Connection.read_into c buf off len

let connect ~sw ~tls (url : Url.t) =
  let socket = Net.connect_host ~sw url.host url.port in
  let transport =
    match url.scheme with
    | Http -> Plain
    | Https -> (
        (* The socket is closed by whoever fails here: the switch would keep
           a dead socket until it ends. *)
        match
          Braid_tls.Connection.connect ~host:url.host (Lazy.force tls) socket
        with
        | c -> Tls c
        | exception e ->
            Net.close socket;
            raise e)
  in
  (try Unix.setsockopt (Fd.to_unix socket) Unix.TCP_NODELAY true
   with Unix.Unix_error _ -> ());
  (* 16 KiB: a body comes through in a quarter of the reads the 4 KiB
     default takes (the proxy's CPU per 64 KiB response, bench/main.exe
     proxy --quick: 150 us with 4 KiB, 103 us with 16 KiB), for 12 KiB more
     per pooled connection. *)
  let before_wait = ref ignore in
  let read buf off len =
    if not (Fd.may_have_input socket) then !before_wait ();
    read_with transport socket buf off len
  in
  let input = Braid_http.Input.create ~size:16384 ~read () in
  {
    socket;
    transport;
    input;
    before_wait;
    closed = false;
    idle_since = 0;
    requests = 0;
  }

let input t = t.input

let read t buf off len =
  let buffered = Braid_http.Input.length t.input in
  if buffered > 0 then (
    let n = Int.min len buffered in
    Bytes.blit t.input.buf t.input.pos buf off n;
    Braid_http.Input.consume t.input n;
    n)
  else read_with t.transport t.socket buf off len

let read_socket t buf off len =
  if not (Fd.may_have_input t.socket) then !(t.before_wait) ();
  read_with t.transport t.socket buf off len

let set_before_wait t f = t.before_wait := f

let read_now t buf off len =
  match t.transport with
  | Tls _ -> -1
  | Plain ->
      if not (Fd.may_have_input t.socket) then -1
      else (
        Fd.spend t.socket;
        match Unix.recv (Fd.to_unix t.socket) buf off len [] with
        | n ->
            (* Fewer than asked: the socket is empty now, and the next wait
               (or a reuse's check) need not try it first. *)
            if n > 0 && n < len then Fd.read_would_block t.socket;
            n
        | exception Unix.Unix_error ((Unix.EAGAIN | Unix.EWOULDBLOCK), _, _) ->
            Fd.read_would_block t.socket;
            -1
        | exception Unix.Unix_error (e, _, _) ->
            raise (Io_error { op = "read"; error = e; detail = "" }))

let may_have_input t =
  match t.transport with
  | Plain -> Fd.may_have_input t.socket
  | Tls c -> Braid_tls.Connection.pending c || Fd.may_have_input t.socket

let write t s =
  match t.transport with
  | Plain -> Net.write_string t.socket s
  | Tls c -> Braid_tls.Connection.write_string c s

let write_bytes t buf off len =
  match t.transport with
  | Plain -> Net.write_all t.socket buf off len
  | Tls c -> Braid_tls.Connection.write_all c buf off len

let close t =
  if not t.closed then (
    t.closed <- true;
    (match t.transport with
    | Plain -> ()
    | Tls c -> ( try Braid_tls.Connection.close c with _ -> ()));
    try Net.close t.socket with Io_error _ -> ())

let is_open t = (not t.closed) && Fd.is_open t.socket

let peek_says_open t =
  match
    Unix.recv (Fd.to_unix t.socket) (Bytes.create 1) 0 1 [ Unix.MSG_PEEK ]
  with
  | 0 -> false (* the server closed its side *)
  | _ -> (
      (* Bytes nobody asked for: garbage after the last response on a plain
         connection; on TLS possibly a record that carries no data. *)
      match t.transport with
      | Plain -> false
      | Tls _ -> true)
  | exception Unix.Unix_error ((Unix.EAGAIN | Unix.EWOULDBLOCK), _, _) ->
      (* The next wait for input will be for new bytes. *)
      Fd.read_would_block t.socket;
      true
  | exception Unix.Unix_error _ -> false

let looks_reusable t =
  is_open t
  && Braid_http.Input.length t.input = 0
  && (match t.transport with
     | Plain -> true
     | Tls c -> not (Braid_tls.Connection.pending c))
  && ((* The last read found the socket empty and the loop has seen no event
         since: no byte and no end of stream came, so no peek (one system
         call per reuse, a sixth of a small proxied request's). A close
         that the loop has not polled yet is the race any reuse has: the
         caller retries what it can on a fresh connection. *)
      (match t.transport with
      | Plain -> not (Fd.may_have_input t.socket)
      | Tls _ -> false)
     || peek_says_open t)

let idle_since t = t.idle_since
let set_idle_since t ns = t.idle_since <- ns
let requests t = t.requests
let count_request t = t.requests <- t.requests + 1
