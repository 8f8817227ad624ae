(* Moved from Websocket, which checks a handshake's Origin with it; Csrf
   checks a form's or an API call's Origin or Referer with the same rule. *)

(* "host[:port]", "[v6]:port": the host (lowercase) and the port's text, if
   any. *)
let host_and_port authority =
  let n = String.length authority in
  let split_at i =
    ( String.lowercase_ascii (String.sub authority 0 i),
      Some (String.sub authority (i + 1) (n - i - 1)) )
  in
  if n > 0 && authority.[0] = '[' then
    match String.index_opt authority ']' with
    | Some j when j + 1 < n && authority.[j + 1] = ':' -> split_at (j + 1)
    | _ -> (String.lowercase_ascii authority, None)
  else
    match String.rindex_opt authority ':' with
    | Some i -> split_at i
    | None -> (String.lowercase_ascii authority, None)

let default_port = function
  | "http" | "ws" -> Some 80
  | "https" | "wss" -> Some 443
  | _ -> None

(* The Origin names the Host's host and port. A port left out is the
   default of the origin's scheme, on both sides: the page at
   https://example.com opens wss://example.com, whose Host has no port. *)
let same_origin ~host origin =
  match String.index_opt origin ':' with
  | Some i
    when i + 2 < String.length origin
         && origin.[i + 1] = '/'
         && origin.[i + 2] = '/' -> (
      let scheme = String.lowercase_ascii (String.sub origin 0 i) in
      let authority =
        String.sub origin (i + 3) (String.length origin - i - 3)
      in
      let default = default_port scheme in
      let o_host, o_port = host_and_port authority in
      let h_host, h_port = host_and_port (String.trim host) in
      (* A port left out is the scheme's; one written is digits only
         (int_of_string would also read "0x1bb", "+443" or "4_43" as 443). *)
      let port = function
        | None -> default
        | Some p
          when p <> ""
               && String.length p <= 5
               && String.for_all (fun c -> c >= '0' && c <= '9') p ->
            Some (int_of_string p)
        | Some _ -> None
      in
      o_host <> "" && String.equal o_host h_host
      &&
      match (port o_port, port h_port) with
      | Some a, Some b -> a = b
      | _ -> false)
  | _ -> false
