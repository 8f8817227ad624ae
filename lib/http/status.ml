let registered = function
  | 100 -> Some "Continue"
  | 101 -> Some "Switching Protocols"
  | 200 -> Some "OK"
  | 201 -> Some "Created"
  | 202 -> Some "Accepted"
  | 203 -> Some "Non-Authoritative Information"
  | 204 -> Some "No Content"
  | 205 -> Some "Reset Content"
  | 206 -> Some "Partial Content"
  | 300 -> Some "Multiple Choices"
  | 301 -> Some "Moved Permanently"
  | 302 -> Some "Found"
  | 303 -> Some "See Other"
  | 304 -> Some "Not Modified"
  | 305 -> Some "Use Proxy"
  | 307 -> Some "Temporary Redirect"
  | 308 -> Some "Permanent Redirect"
  | 400 -> Some "Bad Request"
  | 401 -> Some "Unauthorized"
  | 402 -> Some "Payment Required"
  | 403 -> Some "Forbidden"
  | 404 -> Some "Not Found"
  | 405 -> Some "Method Not Allowed"
  | 406 -> Some "Not Acceptable"
  | 407 -> Some "Proxy Authentication Required"
  | 408 -> Some "Request Timeout"
  | 409 -> Some "Conflict"
  | 410 -> Some "Gone"
  | 411 -> Some "Length Required"
  | 412 -> Some "Precondition Failed"
  | 413 -> Some "Content Too Large"
  | 414 -> Some "URI Too Long"
  | 415 -> Some "Unsupported Media Type"
  | 416 -> Some "Range Not Satisfiable"
  | 417 -> Some "Expectation Failed"
  | 421 -> Some "Misdirected Request"
  | 422 -> Some "Unprocessable Content"
  | 426 -> Some "Upgrade Required"
  | 428 -> Some "Precondition Required"
  | 429 -> Some "Too Many Requests"
  | 431 -> Some "Request Header Fields Too Large"
  | 500 -> Some "Internal Server Error"
  | 501 -> Some "Not Implemented"
  | 502 -> Some "Bad Gateway"
  | 503 -> Some "Service Unavailable"
  | 504 -> Some "Gateway Timeout"
  | 505 -> Some "HTTP Version Not Supported"
  | _ -> None

let reason code =
  match registered code with
  | Some r -> r
  | None -> (
      match code / 100 with
      | 1 -> "Informational"
      | 2 -> "Success"
      | 3 -> "Redirection"
      | 4 -> "Client Error"
      | _ -> "Server Error")

let make_line code = Printf.sprintf "HTTP/1.1 %d %s\r\n" code (reason code)

(* Built once: a response must not pay a sprintf for its first line. *)
let common = Array.init 500 (fun i -> make_line (100 + i))
let is_valid code = code >= 100 && code <= 599

let status_line code =
  if is_valid code then Array.unsafe_get common (code - 100)
  else invalid_arg "Status.status_line"

let has_no_body code = (code >= 100 && code < 200) || code = 204 || code = 304
