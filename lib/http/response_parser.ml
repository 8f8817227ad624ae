open Head_scanner
open Framing_fields

type error = Eof | Invalid of Parse_error.t

exception Clean_end

(* Every refusal of a response is a gateway's: the server upstream is at
   fault, not the client that asked. *)
let refuse reason = reject 502 reason
let is_digit c = c >= '0' && c <= '9'

(* status-line = HTTP-version SP status-code SP [ reason-phrase ]
   (RFC 9112 §4). A missing SP after the code is accepted: the reason is
   optional, some servers drop its separator too, and the code is
   unambiguous without it. *)
let status_line (input : Input.t) (limits : Limits.t) =
  let max = limits.max_request_line in
  let lf =
    match
      find_lf input ~budget:(max + 2) ~status:502 ~reason:"status line too long"
    with
    | lf -> lf
    | exception Truncated ->
        if input.pos = input.lim then raise_notrace Clean_end
        else refuse "status line truncated"
  in
  let buf = input.buf and start = input.pos in
  let stop = content_end buf start lf in
  if stop - start > max then refuse "status line too long";
  let at i = Bytes.unsafe_get buf i in
  if
    stop - start < 12
    || at start <> 'H'
    || at (start + 1) <> 'T'
    || at (start + 2) <> 'T'
    || at (start + 3) <> 'P'
    || at (start + 4) <> '/'
    || (not (is_digit (at (start + 5))))
    || at (start + 6) <> '.'
    || (not (is_digit (at (start + 7))))
    || at (start + 8) <> ' '
  then refuse "malformed status line";
  if at (start + 5) <> '1' then refuse "HTTP version not supported";
  let version : Request.version =
    if at (start + 7) = '0' then Http_1_0 else Http_1_1
  in
  let c = start + 9 in
  if
    (not (is_digit (at c)))
    || (not (is_digit (at (c + 1))))
    || not (is_digit (at (c + 2)))
  then refuse "malformed status code";
  let status =
    ((Char.code (at c) - 48) * 100)
    + ((Char.code (at (c + 1)) - 48) * 10)
    + (Char.code (at (c + 2)) - 48)
  in
  if not (Status.is_valid status) then refuse "status code out of range";
  let reason_start =
    if c + 3 = stop then stop
    else if at (c + 3) = ' ' then c + 4
    else refuse "malformed status line"
  in
  let bad = scan_field_chars buf reason_start stop in
  if bad < stop then reject_char (at bad) "invalid character in reason phrase";
  let reason = Bytes.sub_string buf reason_start (stop - reason_start) in
  Input.consume input (lf + 1 - start);
  (version, status, reason)

let head ~(meth : Method.t) (input : Input.t) (limits : Limits.t) =
  let version, status, reason = status_line input limits in
  let headers =
    try
      field_section input ~max_fields:limits.max_header_fields
        ~max_bytes:limits.max_header_bytes
    with
    | Truncated -> refuse "response head truncated"
    | Rejected e ->
        (* The field scanner answers as a server would (400, 431): the
           fault is upstream's. *)
        raise_notrace (Rejected { e with status = 502 })
  in
  let length = ref cl_none and codings = ref 0 and close = ref false in
  let keep = ref false in
  for i = 0 to Headers.length headers - 1 do
    let name = Headers.name headers i in
    match String.length name with
    | 14 when Headers.equal_name name "content-length" ->
        length := content_length (Headers.value headers i) !length
    | 17 when Headers.equal_name name "transfer-encoding" ->
        codings :=
          transfer_codings (Headers.value headers i) (!codings lor te_seen)
    | 10 when Headers.equal_name name "connection" ->
        let v = Headers.value headers i in
        if Headers.list_has_token v "close" then close := true;
        if Headers.list_has_token v "keep-alive" then keep := true
    | _ -> ()
  done;
  (* The framing fields are checked whatever the status: a message that two
     readers could split differently is refused even where this reader
     would not look at its body. *)
  let framed : Response_head.body =
    if !codings <> 0 then (
      let te = !codings in
      if version = Http_1_0 then
        refuse "Transfer-Encoding in an HTTP/1.0 response";
      if !length <> cl_none then
        refuse "both Content-Length and Transfer-Encoding";
      if te land te_invalid <> 0 then refuse "invalid Transfer-Encoding";
      if te land te_chunked_twice <> 0 then refuse "chunked applied twice";
      if te land (te_chunked lor te_after_chunked lor te_before_chunked) = 0
      then refuse "empty Transfer-Encoding";
      if te land te_before_chunked <> 0 || te land te_after_chunked <> 0 then
        (* gzip and the like as transfer codings: no client is expected to
           decode them (RFC 9112 §6.1 lets a server use only what TE
           offered, and we offer none). *)
        refuse "unsupported transfer coding";
      Chunked)
    else if !length = cl_invalid then refuse "invalid Content-Length"
    else if !length = cl_conflict then
      refuse "conflicting Content-Length values"
    else if !length > limits.max_body then refuse "response body too large"
    else if !length > 0 then Content_length !length
    else if !length = 0 then No_body
    else Until_close
  in
  let body : Response_head.body =
    if
      meth = HEAD
      || (status >= 100 && status < 200)
      || status = 204 || status = 304
      || (meth = CONNECT && status >= 200 && status < 300)
    then No_body
    else framed
  in
  let keep_alive =
    (match body with Until_close -> false | _ -> true)
    &&
    match version with
    | Http_1_1 | Http_2 (* not read here *) -> not !close
    | Http_1_0 -> !keep && not !close
  in
  { Response_head.version; status; reason; headers; body; keep_alive }

let read_response ~meth input limits =
  match head ~meth input limits with
  | response -> Ok response
  | exception Rejected e ->
      Error (Invalid { e with status = 502; close = true })
  | exception Clean_end -> Error Eof
