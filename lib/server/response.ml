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

type t = { status : int; headers : (string * string) list; body : body }

let make ?(headers = []) status body = { status; headers; body }
let plain = "text/plain; charset=utf-8"

let string ?(status = 200) ?(headers = []) ?(content_type = plain) body =
  {
    status;
    headers = ("Content-Type", content_type) :: headers;
    body = String body;
  }

let html ?status ?headers body =
  string ?status ?headers ~content_type:"text/html; charset=utf-8" body

let stream ?(status = 200) ?(headers = []) ?(content_type = plain) f =
  {
    status;
    headers = ("Content-Type", content_type) :: headers;
    body = Stream f;
  }

let empty ?(headers = []) status = { status; headers; body = Empty }

let error ?headers status detail =
  let line = string_of_int status ^ " " ^ Status.reason status in
  let text = if detail = "" then line ^ "\n" else line ^ ": " ^ detail ^ "\n" in
  string ~status ?headers text

let redirect ?(status = 301) location =
  {
    status;
    headers = [ ("Location", location); ("Content-Type", plain) ];
    body = String (location ^ "\n");
  }

let header t name =
  List.find_map
    (fun (n, v) ->
      if Braid_http.Headers.equal_name n name then Some v else None)
    t.headers

let with_header name value t = { t with headers = (name, value) :: t.headers }

let wants_close t =
  List.exists
    (fun (n, v) ->
      Braid_http.Headers.equal_name n "connection"
      && Braid_http.Headers.list_has_token v "close")
    t.headers
