let is_blank c = c = ' ' || c = '\t'

let trim s =
  let n = String.length s in
  let i = ref 0 and j = ref (n - 1) in
  while !i < n && is_blank s.[!i] do
    incr i
  done;
  while !j >= !i && is_blank s.[!j] do
    decr j
  done;
  String.sub s !i (!j - !i + 1)

let is_control c = (c < ' ' && c <> '\t') || c = '\127'

(* What a browser may send in a value: anything but controls; a double
   quote only around the whole value. *)
let read_value v =
  let n = String.length v in
  let v =
    if n >= 2 && v.[0] = '"' && v.[n - 1] = '"' then String.sub v 1 (n - 2)
    else v
  in
  if String.exists is_control v then Error "a control character in a value"
  else if String.contains v '"' then Error "a stray double quote in a value"
  else Ok v

let parse s =
  let rec go acc = function
    | [] -> Ok (List.rev acc)
    | piece :: rest -> (
        let piece = trim piece in
        if piece = "" then go acc rest
        else
          match String.index_opt piece '=' with
          | None -> go acc rest
          | Some i -> (
              let name = trim (String.sub piece 0 i) in
              let value =
                trim (String.sub piece (i + 1) (String.length piece - i - 1))
              in
              if not (Braid_http.Headers.is_name name) then
                Error (Printf.sprintf "%S is not a cookie name (a token)" name)
              else
                match read_value value with
                | Ok v -> go ((name, v) :: acc) rest
                | Error why -> Error (Printf.sprintf "cookie %s: %s" name why)))
  in
  go [] (String.split_on_char ';' s)

let all (r : Handler.request) =
  match Braid_http.Headers.find_all r.head.headers "cookie" with
  | [] -> Ok []
  | lines -> (
      match parse (String.concat "; " lines) with
      | Ok c -> Ok c
      | Error why -> Error (Response.error 400 ("Cookie: " ^ why)))

let get r name = Result.map (List.assoc_opt name) (all r)

type same_site = Strict | Lax | None_

(* RFC 6265 §4.1.1 cookie-octet. *)
let is_cookie_octet c =
  c = '\x21'
  || (c >= '\x23' && c <= '\x2B')
  || (c >= '\x2D' && c <= '\x3A')
  || (c >= '\x3C' && c <= '\x5B')
  || (c >= '\x5D' && c <= '\x7E')

let is_domain_char = function
  | 'a' .. 'z' | 'A' .. 'Z' | '0' .. '9' | '-' | '.' -> true
  | _ -> false

let invalid fmt =
  Printf.ksprintf (fun s -> invalid_arg ("Braid_web.Cookie: " ^ s)) fmt

let set_cookie ?max_age ?expires ?path ?domain ?(secure = false)
    ?(http_only = false) ?same_site name value =
  if not (Braid_http.Headers.is_name name) then
    invalid "%S is not a cookie name (a token)" name;
  if not (String.for_all is_cookie_octet value) then
    invalid "the value of %s holds a byte that is not a cookie-octet: %S" name
      value;
  let b = Buffer.create 64 in
  Buffer.add_string b name;
  Buffer.add_char b '=';
  Buffer.add_string b value;
  Option.iter (fun n -> Printf.bprintf b "; Max-Age=%d" n) max_age;
  Option.iter
    (fun t ->
      Buffer.add_string b "; Expires=";
      Buffer.add_string b (Braid_http.Http_date.format t))
    expires;
  Option.iter
    (fun p ->
      if String.exists (fun c -> c = ';' || is_control c || c > '\x7E') p then
        invalid "path %S holds ';' or a byte that is not printable ASCII" p;
      Buffer.add_string b "; Path=";
      Buffer.add_string b p)
    path;
  Option.iter
    (fun d ->
      if d = "" || not (String.for_all is_domain_char d) then
        invalid "%S is not a domain" d;
      Buffer.add_string b "; Domain=";
      Buffer.add_string b d)
    domain;
  if secure then Buffer.add_string b "; Secure";
  if http_only then Buffer.add_string b "; HttpOnly";
  (match same_site with
  | None -> ()
  | Some Strict -> Buffer.add_string b "; SameSite=Strict"
  | Some Lax -> Buffer.add_string b "; SameSite=Lax"
  | Some None_ ->
      if not secure then invalid "SameSite=None needs Secure (cookie %s)" name;
      Buffer.add_string b "; SameSite=None");
  Buffer.contents b

let set ?max_age ?expires ?path ?domain ?secure ?http_only ?same_site name value
    response =
  Response.with_header "Set-Cookie"
    (set_cookie ?max_age ?expires ?path ?domain ?secure ?http_only ?same_site
       name value)
    response

let delete ?path ?domain name response =
  set ~max_age:0 ~expires:0. ?path ?domain name "" response

(* Secure by default: a signed cookie usually carries who the user is. *)
let set_signed ~keys ?max_age ?expires ?(path = "/") ?domain ?(secure = true)
    ?(http_only = true) ?(same_site = Lax) name value response =
  set ?max_age ?expires ~path ?domain ~secure ~http_only ~same_site name
    (Signed.sign keys ~name value)
    response

type signed = Valid of string | Absent | Invalid of Signed.error

let get_signed ~keys r name =
  Result.map
    (function
      | None -> Absent
      | Some v -> (
          match Signed.verify keys ~name v with
          | Ok v -> Valid v
          | Error e -> Invalid e))
    (get r name)

(* The same defaults as a signed cookie's: encrypted ones carry secrets. *)
let set_encrypted ~keys ?max_age ?expires ?(path = "/") ?domain ?(secure = true)
    ?(http_only = true) ?(same_site = Lax) name value response =
  set ?max_age ?expires ~path ?domain ~secure ~http_only ~same_site name
    (Encrypted.encrypt keys ~name value)
    response

let get_encrypted ~keys r name =
  Result.map
    (function
      | None -> Absent
      | Some v -> (
          match Encrypted.decrypt keys ~name v with
          | Ok v -> Valid v
          | Error e -> Invalid e))
    (get r name)
