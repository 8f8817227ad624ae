open Braid_http

type level = Error | Warning | Info | Debug

type access = {
  peer : Unix.sockaddr option;
  time : float;
  request : Request.t option;
  status : int;
  body_bytes : int;
}

type event =
  | Access of access
  | Message of { time : float; level : level; text : string }
  | Handler_failed of {
      time : float;
      request : Request.t;
      exn : exn;
      backtrace : Printexc.raw_backtrace;
    }

let level = function
  | Access _ -> Info
  | Message { level; _ } -> level
  | Handler_failed _ -> Error

let time = function
  | Access a -> a.time
  | Message { time; _ } | Handler_failed { time; _ } -> time

let level_to_string = function
  | Error -> "error"
  | Warning -> "warning"
  | Info -> "info"
  | Debug -> "debug"

let months =
  [| "Jan"; "Feb"; "Mar"; "Apr"; "May"; "Jun"; "Jul"; "Aug"; "Sep"; "Oct";
     "Nov"; "Dec" |]
[@@ocamlformat "disable"]

let clf_time t =
  let tm = Unix.gmtime t in
  Printf.sprintf "%02d/%s/%04d:%02d:%02d:%02d +0000" tm.tm_mday
    months.(tm.tm_mon) (tm.tm_year + 1900) tm.tm_hour tm.tm_min tm.tm_sec

let escape_into b s =
  String.iter
    (fun c ->
      if c = '"' || c = '\\' || c < ' ' || c >= '\127' then
        Printf.bprintf b "\\x%02X" (Char.code c)
      else Buffer.add_char b c)
    s

let host = function
  | Some (Unix.ADDR_INET (addr, _)) -> Unix.string_of_inet_addr addr
  | Some (Unix.ADDR_UNIX _) -> "unix"
  | None -> "-"

let combined a =
  let b = Buffer.create 160 in
  Buffer.add_string b (host a.peer);
  Buffer.add_string b " - - [";
  Buffer.add_string b (clf_time a.time);
  Buffer.add_string b "] \"";
  let field name =
    match a.request with Some r -> Request.header r name | None -> None
  in
  (match a.request with
  | Some r ->
      escape_into b (Method.to_string r.meth);
      Buffer.add_char b ' ';
      escape_into b r.target;
      Buffer.add_char b ' ';
      Buffer.add_string b (Request.version_to_string r.version)
  | None -> Buffer.add_char b '-');
  Printf.bprintf b "\" %d " a.status;
  if a.body_bytes = 0 then Buffer.add_char b '-'
  else Buffer.add_string b (string_of_int a.body_bytes);
  let quoted v =
    Buffer.add_string b " \"";
    (match v with Some v -> escape_into b v | None -> Buffer.add_char b '-');
    Buffer.add_char b '"'
  in
  quoted (field "referer");
  quoted (field "user-agent");
  Buffer.contents b

let to_string = function
  | Access a -> combined a
  | Message { level; text; _ } -> level_to_string level ^ ": " ^ text
  | Handler_failed { request; exn; backtrace; _ } ->
      let trace = Printexc.raw_backtrace_to_string backtrace in
      Printf.sprintf "error: handler for %s %s raised %s%s"
        (Method.to_string request.meth)
        request.target (Printexc.to_string exn)
        (if trace = "" then "" else "\n" ^ String.trim trace)
