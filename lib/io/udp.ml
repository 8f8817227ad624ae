type socket = Fd.t

exception Error = Handle.Error

type family = [ `Ipv4 | `Ipv6 ]

let fail = Handle.fail

let addr ip port =
  match Unix.inet_addr_of_string ip with
  | addr -> Unix.ADDR_INET (addr, port)
  | exception Failure _ ->
      invalid_arg ("Braid_io.Udp.addr: not an IP address: " ^ ip)

(* [stream:false]: a datagram shorter than asked says nothing about the
   datagrams behind it, so only EAGAIN tells that the socket is drained. *)
let socket ~sw ~op domain =
  let loop = Loop.current ~op:("Braid_io.Udp." ^ op) in
  let unix =
    try Unix.socket ~cloexec:true domain SOCK_DGRAM 0
    with Unix.Unix_error (error, _, _) -> fail op error
  in
  (match Unix.set_nonblock unix with
  | () -> ()
  | exception Unix.Unix_error (error, _, _) ->
      Unix.close unix;
      fail op error);
  Handle.register ~sw loop unix ~socket:true ~stream:false
    ~op:("Braid_io.Udp." ^ op)

let create ~sw family =
  socket ~sw ~op:"create"
    (match family with `Ipv4 -> Unix.PF_INET | `Ipv6 -> Unix.PF_INET6)

let bind ~sw ?(reuse_addr = false) ?(reuse_port = false) addr =
  let domain =
    match addr with
    | Unix.ADDR_INET _ -> Unix.domain_of_sockaddr addr
    | Unix.ADDR_UNIX _ -> invalid_arg "Braid_io.Udp.bind: a Unix-domain address"
  in
  let s = socket ~sw ~op:"bind" domain in
  let unix = Fd.to_unix s in
  match
    if reuse_addr then Unix.setsockopt unix Unix.SO_REUSEADDR true;
    if reuse_port then Unix.setsockopt unix Unix.SO_REUSEPORT true;
    Unix.bind unix addr
  with
  | () -> s
  | exception Unix.Unix_error (error, _, _) ->
      (* The bind error is the one to report; closing a socket that was
         never used cannot fail in a way worth more than that. *)
      (try Fd.close s with Error _ -> ());
      fail "bind" error

let checked op f s =
  Handle.usable s ~op;
  try f (Fd.to_unix s) with Unix.Unix_error (error, _, _) -> fail op error

let connect s peer = checked "connect" (fun unix -> Unix.connect unix peer) s
let local_addr = checked "getsockname" Unix.getsockname
let close = Fd.close

let check_range name buf off len =
  if off < 0 || len < 0 || off > Bytes.length buf - len then
    invalid_arg ("Braid_io.Udp." ^ name ^ ": invalid range")

(* A datagram goes whole, so one successful call ends the send. *)
let send_loop ~op send s a b c =
  ignore
    (Handle.nonblocking s Writable ~op ~blocked:Handle.would_block send a b c
      : int)

let send_to s addr buf off len =
  check_range "send_to" buf off len;
  Handle.usable s ~op:"send_to";
  Loop.spend s;
  send_loop ~op:"send_to"
    (fun _ unix (buf, addr) off len -> Syscall.sendto unix buf off len addr)
    s (buf, addr) off len

let send s buf off len =
  check_range "send" buf off len;
  Handle.usable s ~op:"send";
  Loop.spend s;
  send_loop ~op:"send"
    (fun _ unix buf off len -> Syscall.send unix buf off len)
    s buf off len

type received = { length : int; truncated : bool; source : Unix.sockaddr }

(* Edge-triggered epoll: a receive takes datagrams until EAGAIN before it
   waits, since the edge that announced a datagram still queued will not
   come again ([Handle.nonblocking]'s [Readable]). *)
let receive s buf off len =
  match
    Handle.nonblocking s Readable ~op:"receive_from" ~blocked:Option.is_none
      (fun _ unix buf off len -> Syscall.recvfrom unix buf off len)
      buf off len
  with
  | Some (whole, source) ->
      { length = min whole len; truncated = whole > len; source }
  | None -> assert false

let receive_from s buf off len =
  check_range "receive_from" buf off len;
  Handle.usable s ~op:"receive_from";
  Loop.spend s;
  receive s buf off len
