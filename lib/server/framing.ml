open Braid_web
open Braid_web.Private
open Braid_http

type t = Length of int | Chunked | Unframed

let of_response (response : Response.t) ~chunked =
  if Status.has_no_body response.status then Unframed
  else
    match response.body with
    | Empty -> Length 0
    | String s -> Length (String.length s)
    | File { length; _ } -> Length length
    | Stream _ -> (
        match response.stream_length with
        | Some n -> Length n
        | None -> if chunked then Chunked else Unframed)
    | Upgrade _ -> Unframed

(* Fields the pipeline writes itself. *)
let is_framing name =
  match String.length name with
  | 4 -> Headers.equal_name name "date"
  | 10 -> Headers.equal_name name "connection"
  | 14 -> Headers.equal_name name "content-length"
  | 17 -> Headers.equal_name name "transfer-encoding"
  | _ -> false

let rec write_fields out = function
  | [] -> ()
  | (name, value) :: rest ->
      if not (is_framing name) then Output.add_field out name value;
      write_fields out rest

(* Everything after the Date line. *)
let write_rest out ~headers framing ~upgrade ~keep_alive
    ~(version : Request.version) =
  write_fields out headers;
  (match framing with
  | Length n ->
      Output.add_string out "Content-Length: ";
      Output.add_int out n;
      Output.add_string out "\r\n"
  | Chunked -> Output.add_string out "Transfer-Encoding: chunked\r\n"
  | Unframed -> ());
  if upgrade then Output.add_string out "Connection: Upgrade\r\n"
  else if not keep_alive then Output.add_string out "Connection: close\r\n"
  else if version = Http_1_0 then
    Output.add_string out "Connection: keep-alive\r\n";
  Output.add_string out "\r\n"

let write_head ?(upgrade = false) (c : Pipeline_state.t) ~now ~status ~headers
    framing ~keep_alive ~(version : Request.version) =
  let out = c.out in
  c.head_written <- true;
  Output.add_string out (Status.status_line status);
  Output.add_string out (Head_cache.header_line c.dates now);
  match framing with
  | Length length when keep_alive && version = Http_1_1 && not upgrade -> (
      (* The common answer: the rest of the head depends only on the fields
         and the length, and a crowd asking for one file sends the same
         ones (Static gives the same list each time). *)
      match Head_cache.rendered c.dates headers ~length with
      | Some text -> Output.add_string out text
      | None ->
          let start = Output.length out in
          write_rest out ~headers framing ~upgrade ~keep_alive ~version;
          if Head_cache.worth_rendering c.dates headers ~length then
            Head_cache.keep_rendered c.dates headers ~length
              (Output.contents_from out start))
  | _ -> write_rest out ~headers framing ~upgrade ~keep_alive ~version

(* The most one sendfile call is asked for: like the pipeline's writes, a
   client that keeps reading takes each within the send timeout. 256 KiB:
   at 100 connections, a 1 MiB file cost 100 us of server CPU per request
   in 256 KiB pieces, 150 us in 64 KiB ones (more sendfile calls, each with
   its SIGPIPE mask), about as much as 256 KiB in 1 MiB ones. *)
let file_piece = 262144

(* A body that does not fit beside the head in the output buffer: the head
   leaves with MSG_MORE, so that the kernel sends it in the packet of the
   body's first bytes rather than alone. *)
let flush_head (c : Pipeline_state.t) ~length =
  match c.file_sender with
  | Some sender when length > Output.room c.out ->
      Output.flush_with c.out (sender ()).write_more
  | _ -> ()

let write_file (c : Pipeline_state.t) (contents : File.contents) ~offset ~length
    =
  match contents with
  | In_memory s ->
      (* The file changed size since its stat: the framing is lost. *)
      if offset + length > String.length s then raise Unwind.Abort;
      if length > 4096 then flush_head c ~length;
      Output.send c.out (Bytes.unsafe_of_string s) offset length
  | Reader { read; close; file } ->
      let rec copy offset remaining =
        if remaining > 0 then (
          let n =
            Output.fill_from c.out (fun buf off len ->
                read ~offset buf off (min len remaining))
          in
          if n = 0 then raise Unwind.Abort;
          copy (offset + n) (remaining - n))
      in
      (* Fewer bytes than asked: the file shrank, and the Content-Length
         promised cannot be kept. Where sendfile does not apply, nothing
         was sent: the same bytes are read and written instead. *)
      let rec send (sender : Output.file_sender) fd offset remaining =
        if remaining > 0 then
          let piece =
            if remaining > file_piece then file_piece else remaining
          in
          match sender.send_file fd ~off:offset ~len:piece with
          | n when n < piece -> raise Unwind.Abort
          | _ -> send sender fd (offset + piece) (remaining - piece)
          | exception Output.Cannot_send_file -> copy offset remaining
      in
      Fun.protect ~finally:close (fun () ->
          match
            match (file, c.file_sender) with
            | Some fd, Some sender when length > Output.room c.out ->
                let sender = sender () in
                Output.flush_with c.out sender.write_more;
                send sender fd offset length
            | _ -> copy offset length
          with
          | () -> ()
          | exception e when Unwind.is_connections_own e ->
              Printexc.raise_with_backtrace e (Printexc.get_raw_backtrace ())
          | exception e ->
              Pipeline_state.log_error c
                ("reading a file: " ^ Printexc.to_string e);
              raise Unwind.Abort)

let write_stream ?length (c : Pipeline_state.t) (req : Request.t) ~time f
    ~chunked =
  let sent = ref 0 and limit = c.config.output_buffer in
  (* Valid while [f] runs only: a fiber [f] forked and left running must not
     write into this connection's buffer afterwards. *)
  let open_ = ref true in
  let check () =
    if not !open_ then
      invalid_arg "Braid_web.Response.Writer: the stream is over"
  in
  let write buf off len =
    check ();
    (* Bytes past the Content-Length sent would be read as the next
       response: they are not sent, and the connection closes. *)
    (match length with
    | Some n when !sent + len > n -> raise Unwind.Abort
    | _ -> ());
    if chunked then (
      Output.add_hex c.out len;
      Output.add_string c.out "\r\n");
    (* A piece too large for even an empty buffer is sent at once, past
       it: what the buffer holds (the head, a chunk's size) leaves with it
       in one packet, not alone before it (a proxy relaying 64 KiB pieces:
       one wake-up of the client, not two). A smaller piece is buffered
       after the flush, so the flush must not wait for it. *)
    if len > 4096 && len > Output.length c.out + Output.room c.out then
      flush_head c ~length:len;
    Output.send c.out buf off len;
    if chunked then Output.add_string c.out "\r\n";
    sent := !sent + len;
    if Output.length c.out >= limit then Output.flush c.out
  in
  let flush () =
    check ();
    Output.flush c.out
  in
  let writer = Response.Writer.make ~write ~flush in
  (match f writer with
  | () -> open_ := false
  | exception e when Unwind.is_connections_own e ->
      open_ := false;
      Printexc.raise_with_backtrace e (Printexc.get_raw_backtrace ())
  | exception exn ->
      let backtrace = Printexc.get_raw_backtrace () in
      open_ := false;
      c.services.log (Handler_failed { time; request = req; exn; backtrace });
      raise Unwind.Abort);
  (match length with
  | Some n when !sent < n ->
      (* Fewer than promised: only closing tells the client. *)
      raise Unwind.Abort
  | _ -> ());
  if chunked then Output.add_string c.out "0\r\n\r\n";
  !sent

let refusal ~status text =
  let body = status ^ ": " ^ text ^ "\n" in
  Printf.sprintf
    "HTTP/1.1 %s\r\n\
     Content-Type: text/plain\r\n\
     Content-Length: %d\r\n\
     Connection: close\r\n\
     \r\n\
     %s"
    status (String.length body) body
