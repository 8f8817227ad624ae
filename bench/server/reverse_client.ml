type t = {
  fd : Unix.file_descr;
  buf : bytes;
  mutable pos : int;
  mutable lim : int;
}

let connect ~port =
  let fd = Unix.socket PF_INET SOCK_STREAM 0 in
  Unix.setsockopt fd TCP_NODELAY true;
  Unix.connect fd (ADDR_INET (Unix.inet_addr_loopback, port));
  { fd; buf = Bytes.create 262144; pos = 0; lim = 0 }

let close t = Unix.close t.fd

type request = { text : string; length : int }

let request ~port body =
  {
    length = String.length body;
    text =
      Printf.sprintf
        "POST /reverse HTTP/1.1\r\n\
         Host: 127.0.0.1:%d\r\n\
         User-Agent: curl/7.88.1\r\n\
         Accept: */*\r\n\
         Content-Type: application/octet-stream\r\n\
         Content-Length: %d\r\n\
         \r\n\
         %s"
        port (String.length body) body;
  }

let rec write_all fd s off len =
  if len > 0 then
    let n = Unix.write_substring fd s off len in
    write_all fd s (off + n) (len - n)

let fill t =
  if t.pos = t.lim then (
    t.pos <- 0;
    t.lim <- 0);
  if t.lim = Bytes.length t.buf then (
    Bytes.blit t.buf t.pos t.buf 0 (t.lim - t.pos);
    t.lim <- t.lim - t.pos;
    t.pos <- 0);
  match Unix.read t.fd t.buf t.lim (Bytes.length t.buf - t.lim) with
  | 0 -> failwith "the server closed the connection"
  | n -> t.lim <- t.lim + n

(* The head, up to its empty line, as a string. *)
let rec head t =
  let rec find i =
    if i + 4 > t.lim then None
    else if Bytes.sub_string t.buf i 4 = "\r\n\r\n" then Some i
    else find (i + 1)
  in
  match find t.pos with
  | Some i ->
      let h = Bytes.sub_string t.buf t.pos (i - t.pos) in
      t.pos <- i + 4;
      h
  | None ->
      fill t;
      head t

(* Reads a response; [keep] collects its body. *)
let response t ~keep =
  let h = head t in
  if String.length h < 12 || String.sub h 9 3 <> "200" then
    failwith ("unexpected response: " ^ h);
  let n =
    match Bench_harness.content_length h with
    | Some n -> n
    | None -> failwith "no length"
  in
  let body = if keep then Buffer.create n else Buffer.create 0 in
  let rec go remaining =
    if remaining > 0 then (
      if t.pos = t.lim then fill t;
      let k = min remaining (t.lim - t.pos) in
      if keep then Buffer.add_subbytes body t.buf t.pos k;
      t.pos <- t.pos + k;
      go (remaining - k))
  in
  go n;
  (n, Buffer.contents body)

let post t request =
  write_all t.fd request.text 0 (String.length request.text);
  let n, _ = response t ~keep:false in
  if n <> request.length then failwith "reversed body of the wrong length"

let get t path =
  let r = Printf.sprintf "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" path in
  write_all t.fd r 0 (String.length r);
  snd (response t ~keep:true)

let check_reverse t ~port body =
  let r = (request ~port body).text in
  write_all t.fd r 0 (String.length r);
  let _, got = response t ~keep:true in
  let n = String.length body in
  if got <> String.init n (fun i -> body.[n - 1 - i]) then
    failwith "the server did not reverse the body"
