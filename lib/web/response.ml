module Writer = struct
  type t = { write : bytes -> int -> int -> unit; flush : unit -> unit }

  let make ~write ~flush = { write; flush }

  let write_bytes t buf off len =
    if off < 0 || len < 0 || off > Bytes.length buf - len then
      invalid_arg "Response.Writer.write_bytes";
    if len > 0 then t.write buf off len

  (* The pipeline's writer only reads the bytes. *)
  let write t s =
    if s <> "" then t.write (Bytes.unsafe_of_string s) 0 (String.length s)

  let flush t = t.flush ()
end

type body =
  | Empty
  | String of string
  | Stream of (Writer.t -> unit)
  | File of { path : string; info : File.info; offset : int; length : int }
  | Upgrade of { protocol : string; run : Upgraded.t -> unit }

type t = {
  status : int;
  headers : (string * string) list;
  body : body;
  stream_length : int option;
}

(* {1 Checks} *)

let check_status status =
  if not (Braid_http.Status.is_valid status) then
    invalid_arg
      (Printf.sprintf "Braid_web.Response: status %d is not in 100-599" status)

let check_field (name, value) =
  if not (Braid_http.Headers.is_name name) then
    invalid_arg
      (Printf.sprintf "Braid_web.Response: %S is not a field name (a token)"
         name);
  if not (Braid_http.Headers.is_value value) then
    invalid_arg
      (Printf.sprintf
         "Braid_web.Response: the value of %s holds CR, LF, NUL or another \
          control character: %S"
         name value)

let check_fields headers = List.iter check_field headers

(* A 101 and an upgrade go together: the pipeline hands the connection over
   for nothing else. *)
let check_body status body =
  match body with
  | Upgrade _ when status <> 101 ->
      invalid_arg
        (Printf.sprintf
           "Braid_web.Response: an upgrade must have status 101, not %d" status)
  | (Empty | String _ | Stream _ | File _) when status = 101 ->
      invalid_arg "Braid_web.Response: status 101 is only for Response.upgrade"
  | _ -> ()

(* A protocol of an [Upgrade] field: a token, or token "/" token (RFC 9110
   §7.8). *)
let is_protocol p =
  match String.index_opt p '/' with
  | None -> Braid_http.Headers.is_name p
  | Some i ->
      Braid_http.Headers.is_name (String.sub p 0 i)
      && Braid_http.Headers.is_name
           (String.sub p (i + 1) (String.length p - i - 1))

(* {1 Construction} *)

let plain = "text/plain; charset=utf-8"

(* The server's own responses: fields it writes itself, known to be valid. *)
let trusted ?(headers = []) status body =
  { status; headers; body; stream_length = None }

let check_stream_length body = function
  | None -> ()
  | Some n -> (
      if n < 0 then invalid_arg "Braid_web.Response: a negative stream length";
      match body with
      | Stream _ -> ()
      | Empty | String _ | File _ | Upgrade _ ->
          invalid_arg "Braid_web.Response: a stream length without a stream")

let make ?(headers = []) ?stream_length status body =
  check_status status;
  check_fields headers;
  check_body status body;
  check_stream_length body stream_length;
  { status; headers; body; stream_length }

let with_type ?stream_length ~content_type status headers body =
  check_status status;
  check_fields headers;
  check_body status body;
  let headers =
    (* The default is known to be valid. *)
    if content_type == plain then ("Content-Type", plain) :: headers
    else
      let field = ("Content-Type", content_type) in
      check_field field;
      field :: headers
  in
  check_stream_length body stream_length;
  { status; headers; body; stream_length }

let string ?(status = 200) ?(headers = []) ?(content_type = plain) body =
  with_type ~content_type status headers (String body)

let html ?status ?headers body =
  string ?status ?headers ~content_type:"text/html; charset=utf-8" body

let stream ?(status = 200) ?(headers = []) ?(content_type = plain) ?length f =
  with_type ?stream_length:length ~content_type status headers (Stream f)

let empty ?headers status = make ?headers status Empty

let error ?headers status detail =
  check_status status;
  check_body status Empty;
  let line = string_of_int status ^ " " ^ Braid_http.Status.reason status in
  let text = if detail = "" then line ^ "\n" else line ^ ": " ^ detail ^ "\n" in
  string ~status ?headers text

let redirect ?(status = 301) location =
  let field = ("Location", location) in
  check_status status;
  check_body status Empty;
  check_field field;
  {
    status;
    headers = [ field; ("Content-Type", plain) ];
    body = String (location ^ "\n");
    stream_length = None;
  }

let upgrade ?(headers = []) ~protocol run =
  if not (is_protocol protocol) then
    invalid_arg
      (Printf.sprintf "Braid_web.Response.upgrade: %S is not a protocol"
         protocol);
  check_fields headers;
  let headers =
    ("Upgrade", protocol)
    :: List.filter
         (fun (n, _) -> not (Braid_http.Headers.equal_name n "upgrade"))
         headers
  in
  {
    status = 101;
    headers;
    body = Upgrade { protocol; run };
    stream_length = None;
  }

let header t name =
  List.find_map
    (fun (n, v) ->
      if Braid_http.Headers.equal_name n name then Some v else None)
    t.headers

let with_header name value t =
  check_field (name, value);
  { t with headers = t.headers @ [ (name, value) ] }

let without_header name t =
  {
    t with
    headers =
      List.filter
        (fun (n, _) -> not (Braid_http.Headers.equal_name n name))
        t.headers;
  }

let rec close_among = function
  | [] -> false
  | (n, v) :: rest ->
      Braid_http.Headers.equal_name n "connection"
      && Braid_http.Headers.list_has_token v "close"
      || close_among rest

let wants_close t = close_among t.headers

module Private = struct
  let trusted = trusted
end
