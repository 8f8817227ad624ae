open Head_scanner
open Framing_fields

type error = Eof | Invalid of Parse_error.t

(* The input ended before the first byte of a request. *)
exception Clean_end

(* The byte at [i] ended a part of the line too early. *)
let reject_at buf i stop reason =
  if i = stop then reject 400 reason
  else reject_char (Bytes.unsafe_get buf i) reason

let is_alpha c = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
let is_digit c = c >= '0' && c <= '9'

(* absolute-URI starts with scheme ":" (RFC 3986 §3.1). *)
let is_absolute target =
  let n = String.length target in
  let rec scheme i =
    i < n
    &&
    match String.unsafe_get target i with
    | ':' -> i > 0
    | c ->
        (is_alpha c || is_digit c || c = '+' || c = '-' || c = '.')
        && scheme (i + 1)
  in
  n > 0 && is_alpha (String.unsafe_get target 0) && scheme 1

let target_form (meth : Method.t option) target : Request.target_form =
  if String.equal target "*" then
    match meth with
    | Some OPTIONS | None -> Asterisk_form
    | Some _ -> reject 400 "asterisk-form is only for OPTIONS"
  else
    match meth with
    | Some CONNECT ->
        (* authority-form is uri-host ":" port, without userinfo (RFC 9112
           §3.2.3). *)
        if Uri_host.is_authority_form target then Authority_form
        else reject 400 "CONNECT needs an authority-form target"
    | _ ->
        if String.unsafe_get target 0 = '/' then Origin_form
        else if is_absolute target then Absolute_form
        else reject 400 "invalid request target"

(* Reads the request line; returns the method ([None]: unknown), the target
   and the version. Skips blank lines first, within the same budget. *)
let rec request_line (input : Input.t) (limits : Limits.t) ~blank_budget =
  let max = limits.max_request_line in
  let lf =
    match
      find_lf input ~budget:(max + 2) ~status:414
        ~reason:"request line too long"
    with
    | lf -> lf
    | exception Truncated ->
        if input.pos = input.lim then raise_notrace Clean_end
        else reject 400 "request line truncated"
  in
  let buf = input.buf and start = input.pos in
  let stop = content_end buf start lf in
  if stop = start then (
    let line = lf + 1 - start in
    if line > blank_budget then reject 400 "too many blank lines";
    Input.consume input line;
    request_line input limits ~blank_budget:(blank_budget - line))
  else (
    if stop - start > max then reject 414 "request line too long";
    let meth_stop = scan_tchars buf start stop in
    if meth_stop = stop || Bytes.unsafe_get buf meth_stop <> ' ' then
      reject_at buf meth_stop stop "malformed request line";
    if meth_stop = start then reject 400 "empty method";
    let target_start = meth_stop + 1 in
    let target_stop = scan_target_chars buf target_start stop in
    if target_stop = stop || Bytes.unsafe_get buf target_stop <> ' ' then
      reject_at buf target_stop stop "malformed request target";
    if target_stop = target_start then reject 400 "empty request target";
    let v = target_stop + 1 in
    if
      stop - v <> 8
      || Bytes.unsafe_get buf v <> 'H'
      || Bytes.unsafe_get buf (v + 1) <> 'T'
      || Bytes.unsafe_get buf (v + 2) <> 'T'
      || Bytes.unsafe_get buf (v + 3) <> 'P'
      || Bytes.unsafe_get buf (v + 4) <> '/'
      || (not (is_digit (Bytes.unsafe_get buf (v + 5))))
      || Bytes.unsafe_get buf (v + 6) <> '.'
      || not (is_digit (Bytes.unsafe_get buf (v + 7)))
    then
      reject_at buf (scan_field_chars buf v stop) stop "malformed HTTP version";
    if Bytes.unsafe_get buf (v + 5) <> '1' then
      reject 505 "HTTP version not supported";
    let version : Request.version =
      if Bytes.unsafe_get buf (v + 7) = '0' then Http_1_0 else Http_1_1
    in
    let meth = Method.of_bytes buf start (meth_stop - start) in
    let target =
      Bytes.sub_string buf target_start (target_stop - target_start)
    in
    Input.consume input (lf + 1 - start);
    (meth, target, version))

let conn_close = 1
let conn_keep_alive = 2

let connection_options value flags =
  let flags =
    if Headers.list_has_token value "close" then flags lor conn_close else flags
  in
  if Headers.list_has_token value "keep-alive" then flags lor conn_keep_alive
  else flags

(* The head was read whole and the framing is known: these errors may keep
   the connection when there is no body to skip. *)
let refuse ~keep_alive (body : Request.body) status reason =
  let close = match body with No_body -> not keep_alive | _ -> true in
  raise_notrace (Rejected { status; reason; close })

let head ?source (input : Input.t) (limits : Limits.t) =
  let meth, target, version =
    request_line input limits ~blank_budget:limits.max_request_line
  in
  let form = target_form meth target in
  let headers =
    try
      field_section input ~max_fields:limits.max_header_fields
        ~max_bytes:limits.max_header_bytes
    with Truncated -> reject 400 "request head truncated"
  in
  let hosts = ref 0
  and host_invalid = ref false
  and length = ref cl_none
  and codings = ref 0
  and connection = ref 0
  and expect = ref false in
  for i = 0 to Headers.length headers - 1 do
    let name = Headers.name headers i in
    match String.length name with
    | 4 when Headers.equal_name name "host" ->
        incr hosts;
        if not (Uri_host.is_host_field (Headers.value headers i)) then
          host_invalid := true
    | 14 when Headers.equal_name name "content-length" ->
        length := content_length (Headers.value headers i) !length
    | 17 when Headers.equal_name name "transfer-encoding" ->
        codings :=
          transfer_codings (Headers.value headers i) (!codings lor te_seen)
    | 10 when Headers.equal_name name "connection" ->
        connection := connection_options (Headers.value headers i) !connection
    | 6 when Headers.equal_name name "expect" ->
        (* Expect = #expectation (RFC 9110 §10.1.1). *)
        if Headers.list_has_token (Headers.value headers i) "100-continue" then
          expect := true
    | _ -> ()
  done;
  let body : Request.body =
    if !codings <> 0 then (
      let te = !codings in
      if version = Http_1_0 then
        reject 400 "Transfer-Encoding in an HTTP/1.0 request";
      if !length <> cl_none then
        reject 400 "both Content-Length and Transfer-Encoding";
      if te land te_invalid <> 0 then reject 400 "invalid Transfer-Encoding";
      if te land te_chunked_twice <> 0 then reject 400 "chunked applied twice";
      if te land (te_chunked lor te_after_chunked lor te_before_chunked) = 0
      then reject 400 "empty Transfer-Encoding";
      (* RFC 9112 §6.3: without chunked last the body's end is unknown, so
         400 and close, not the 501 of a coding merely not supported. *)
      if te land te_chunked = 0 || te land te_after_chunked <> 0 then
        reject 400 "final transfer coding is not chunked";
      if te land te_before_chunked <> 0 then
        reject 501 "unsupported transfer coding";
      Chunked)
    else if !length = cl_invalid then reject 400 "invalid Content-Length"
    else if !length = cl_conflict then
      reject 400 "conflicting Content-Length values"
    else if !length > limits.max_body then
      reject 413 (Limits.body_too_large ?source limits)
    else if !length > 0 then Content_length !length
    else No_body
  in
  let keep_alive =
    match version with
    | Http_1_1 | Http_2 (* not read here *) -> !connection land conn_close = 0
    | Http_1_0 -> !connection = conn_keep_alive
  in
  if !hosts > 1 then refuse ~keep_alive body 400 "several Host fields"
  else if !hosts = 0 && version = Http_1_1 then
    refuse ~keep_alive body 400 "missing Host"
  else if !host_invalid then refuse ~keep_alive body 400 "invalid Host";
  match meth with
  | None -> refuse ~keep_alive body 501 "unknown method"
  | Some meth ->
      {
        Request.meth;
        target;
        target_form = form;
        version;
        headers;
        body;
        keep_alive;
        expect_continue = !expect && version = Http_1_1;
      }

let read_request ?source input limits =
  match head ?source input limits with
  | request -> Ok request
  | exception Rejected e -> Error (Invalid e)
  | exception Clean_end -> Error Eof
