type result = {
  completed : int;
  seconds : float;
  errors : int;
  first_error : string option;
  client_cpu : float;
}

let handshakes_per_second r = float r.completed /. r.seconds

(* One connection slot: a connection in one of its phases, replaced by a
   fresh one when it completes or fails. *)
type phase =
  | Idle  (** No connection: the last connect failed at once. *)
  | Connecting
  | Handshake of Ssl.socket
  | Sending of Ssl.socket * int  (** bytes of the request sent *)
  | Receiving of Ssl.socket

type slot = {
  mutable fd : Unix.file_descr;
  mutable phase : phase;
  mutable wants_write : bool;
  mutable started : float;
  received : Buffer.t;
}

let idle slot = match slot.phase with Idle -> true | _ -> false

exception Failed of string

(* The calls that keep the runtime lock: one thread, non-blocking sockets. *)
module R = Ssl.Runtime_lock

let timeout = 5.

let context =
  lazy
    (Ssl.init ();
     (* OpenSSL's defaults but the protocol: TLS 1.3 and nothing older. No
        session is ever set on a connection, so none is resumed. *)
     let ctx = Ssl.create_context Ssl.TLSv1_3 Ssl.Client_context in
     Ssl.set_min_protocol_version ctx Ssl.TLSv1_3;
     ctx)

(* Drains OpenSSL's error queue (a stale error would turn the next
   connection's "want read" into a failure) and returns its reasons. *)
let openssl_errors () =
  let rec drain acc =
    match Ssl.Error.get_error () with
    | { library_number = 0; reason_code = 0; _ } -> List.rev acc
    | { reason; reason_code; _ } ->
        drain (Option.value reason ~default:(string_of_int reason_code) :: acc)
  in
  drain []

let cpu_now () =
  let t = Unix.times () in
  t.tms_utime +. t.tms_stime

(* The index of the blank line ending the head, if it has arrived. *)
let head_end b =
  let s = Buffer.contents b in
  let n = String.length s in
  let rec find i =
    if i + 3 >= n then None
    else if
      s.[i] = '\r' && s.[i + 1] = '\n' && s.[i + 2] = '\r' && s.[i + 3] = '\n'
    then Some (i + 4)
    else find (i + 1)
  in
  find 0

(* [`Done] once the whole response is in, [`More] if part of it is
   missing; raises [Failed] if it is not the response expected. *)
let check_response ~size b =
  match head_end b with
  | None -> `More
  | Some body_at -> (
      let head = Buffer.sub b 0 body_at in
      if not (String.starts_with ~prefix:"HTTP/1.1 200 " head) then
        raise
          (Failed
             ("status line: "
             ^ String.sub head 0
                 (Option.value ~default:0 (String.index_opt head '\r'))));
      match Bench_harness.content_length head with
      | None -> raise (Failed "no Content-Length")
      | Some n when n <> size ->
          raise (Failed (Printf.sprintf "Content-Length %d, not %d" n size))
      | Some n ->
          let got = Buffer.length b - body_at in
          if got > n then raise (Failed "more bytes than Content-Length")
          else if got = n then `Done
          else `More)

let run ~connections ~seconds ~port ~path ~size =
  let ctx = Lazy.force context in
  let request =
    Printf.sprintf
      "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" path
  in
  let address = Unix.ADDR_INET (Unix.inet_addr_loopback, port) in
  let completed = ref 0 and errors = ref 0 and first_error = ref None in
  let buf = Bytes.create 16384 in
  let open_connection slot =
    let fd = Unix.socket PF_INET SOCK_STREAM 0 in
    Unix.set_nonblock fd;
    slot.fd <- fd;
    slot.phase <- Connecting;
    slot.wants_write <- true;
    slot.started <- Unix.gettimeofday ();
    Buffer.clear slot.received;
    match Unix.connect fd address with
    | () | (exception Unix.Unix_error ((EINPROGRESS | EAGAIN), _, _)) -> ()
  in
  (* A close_notify once the handshake is done, as a browser sends. *)
  let close slot =
    (match slot.phase with
    | Receiving s -> (
        try ignore (R.close_notify s)
        with Ssl.Connection_error _ -> ignore (openssl_errors ()))
    | Idle | Connecting | Handshake _ | Sending _ -> ());
    if not (idle slot) then (
      slot.phase <- Idle;
      try Unix.close slot.fd with Unix.Unix_error _ -> ())
  in
  let fail slot why =
    let why =
      match openssl_errors () with
      | [] -> why
      | l -> why ^ ": " ^ String.concat "; " l
    in
    incr errors;
    if !first_error = None then first_error := Some why;
    close slot
  in
  let describe = function
    | Ssl.Error_ssl -> " (SSL error)"
    | Ssl.Error_syscall -> " (connection closed or reset)"
    | Ssl.Error_zero_return -> " (closed)"
    | _ -> ""
  in
  (* Advances [slot] as far as it goes without blocking: [true] once its
     response is complete. Raises [Failed]. *)
  let rec advance slot =
    match slot.phase with
    | Idle -> false
    | Connecting -> (
        match Unix.getsockopt_error slot.fd with
        | Some e -> raise (Failed ("connect: " ^ Unix.error_message e))
        | None ->
            slot.phase <- Handshake (Ssl.embed_socket slot.fd ctx);
            advance slot)
    | Handshake s -> (
        match R.connect s with
        | () ->
            slot.phase <- Sending (s, 0);
            advance slot
        | exception Ssl.Connection_error Ssl.Error_want_read ->
            slot.wants_write <- false;
            false
        | exception Ssl.Connection_error Ssl.Error_want_write ->
            slot.wants_write <- true;
            false
        | exception Ssl.Connection_error e ->
            raise (Failed ("handshake" ^ describe e)))
    | Sending (s, sent) -> (
        let n = String.length request - sent in
        match R.write_substring s request sent n with
        | k when k = n ->
            slot.phase <- Receiving s;
            slot.wants_write <- false;
            advance slot
        | k ->
            slot.phase <- Sending (s, sent + k);
            false
        | exception Ssl.Write_error Ssl.Error_want_write ->
            slot.wants_write <- true;
            false
        | exception Ssl.Write_error Ssl.Error_want_read ->
            slot.wants_write <- false;
            false
        | exception Ssl.Write_error e -> raise (Failed ("write" ^ describe e)))
    | Receiving s -> (
        match R.read s buf 0 (Bytes.length buf) with
        | 0 -> raise (Failed "closed before the end of the response")
        | n -> (
            Buffer.add_subbytes slot.received buf 0 n;
            match check_response ~size slot.received with
            | `Done -> true
            | `More -> advance slot)
        | exception Ssl.Read_error Ssl.Error_want_read ->
            slot.wants_write <- false;
            false
        | exception Ssl.Read_error Ssl.Error_want_write ->
            slot.wants_write <- true;
            false
        | exception Ssl.Read_error (Ssl.Error_zero_return | Ssl.Error_syscall)
          ->
            raise (Failed "closed before the end of the response")
        | exception Ssl.Read_error e -> raise (Failed ("read" ^ describe e)))
  in
  (* A slot's connection is done (or failed): a new one in its place. A
     connect that fails at once is a failed connection, and the slot tries
     again at the next turn of the loop. *)
  let renew slot =
    match open_connection slot with
    | () -> ()
    | exception Unix.Unix_error (e, _, _) ->
        fail slot ("connect: " ^ Unix.error_message e)
  in
  let slots =
    Array.init connections (fun _ ->
        {
          fd = Unix.stdin;
          phase = Idle;
          wants_write = true;
          started = 0.;
          received = Buffer.create 2048;
        })
  in
  let cpu0 = cpu_now () in
  let t0 = Unix.gettimeofday () in
  let deadline = t0 +. seconds in
  let by_fd = Hashtbl.create connections in
  let rec loop () =
    let now = Unix.gettimeofday () in
    if now < deadline then (
      Hashtbl.reset by_fd;
      let reads = ref [] and writes = ref [] in
      Array.iter
        (fun slot ->
          if (not (idle slot)) && now -. slot.started > timeout then
            fail slot "no response within 5 s";
          if idle slot then renew slot;
          if not (idle slot) then (
            Hashtbl.replace by_fd slot.fd slot;
            if slot.wants_write then writes := slot.fd :: !writes
            else reads := slot.fd :: !reads))
        slots;
      let readable, writable, _ =
        try Unix.select !reads !writes [] (Float.min 0.1 (deadline -. now))
        with Unix.Unix_error (EINTR, _, _) -> ([], [], [])
      in
      List.iter
        (fun fd ->
          match Hashtbl.find_opt by_fd fd with
          | None -> ()
          | Some slot -> (
              Hashtbl.remove by_fd fd;
              match advance slot with
              | true ->
                  incr completed;
                  close slot;
                  renew slot
              | false -> ()
              | exception Failed why ->
                  fail slot why;
                  renew slot))
        (readable @ writable);
      loop ())
  in
  let finish () = Array.iter close slots in
  let previous = Sys.signal Sys.sigpipe Sys.Signal_ignore in
  Fun.protect
    ~finally:(fun () -> Sys.set_signal Sys.sigpipe previous)
    (fun () ->
      match loop () with
      | () -> finish ()
      | exception e ->
          finish ();
          raise e);
  {
    completed = !completed;
    seconds;
    errors = !errors;
    first_error = !first_error;
    client_cpu = cpu_now () -. cpu0;
  }
