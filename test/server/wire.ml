type response = {
  status : int;
  headers : (string * string) list;
  body : string;
  chunked : bool;
}

let header r name =
  List.find_map
    (fun (n, v) ->
      if String.lowercase_ascii n = String.lowercase_ascii name then Some v
      else None)
    r.headers

let header_count r name =
  List.length
    (List.filter
       (fun (n, _) -> String.lowercase_ascii n = String.lowercase_ascii name)
       r.headers)

let find_from s pos sub =
  let n = String.length s and m = String.length sub in
  let rec go i =
    if i + m > n then None
    else if String.sub s i m = sub then Some i
    else go (i + 1)
  in
  go pos

let line s pos =
  match find_from s pos "\r\n" with
  | Some i -> Some (String.sub s pos (i - pos), i + 2)
  | None -> None

exception Incomplete

let parse_one s pos ~head =
  let status_line, pos =
    match line s pos with Some x -> x | None -> raise Incomplete
  in
  let status =
    match String.split_on_char ' ' status_line with
    | "HTTP/1.1" :: code :: _ -> int_of_string code
    | _ -> failwith ("bad status line: " ^ String.escaped status_line)
  in
  let rec fields pos acc =
    match line s pos with
    | None -> raise Incomplete
    | Some ("", pos) -> (List.rev acc, pos)
    | Some (l, pos) -> (
        match String.index_opt l ':' with
        | None -> failwith ("bad field: " ^ l)
        | Some i ->
            let name = String.sub l 0 i in
            let value =
              String.trim (String.sub l (i + 1) (String.length l - i - 1))
            in
            fields pos ((name, value) :: acc))
  in
  let headers, pos = fields pos [] in
  let r = { status; headers; body = ""; chunked = false } in
  let no_body =
    head || (status >= 100 && status < 200) || status = 204 || status = 304
  in
  if no_body then (r, pos)
  else
    match header r "transfer-encoding" with
    | Some "chunked" ->
        let b = Buffer.create 64 in
        let rec chunks pos =
          match line s pos with
          | None -> raise Incomplete
          | Some (size, pos) ->
              let n = int_of_string ("0x" ^ size) in
              if n = 0 then
                let rec trailers pos =
                  match line s pos with
                  | None -> raise Incomplete
                  | Some ("", pos) -> pos
                  | Some (_, pos) -> trailers pos
                in
                trailers pos
              else if pos + n + 2 > String.length s then raise Incomplete
              else (
                Buffer.add_string b (String.sub s pos n);
                if String.sub s (pos + n) 2 <> "\r\n" then
                  failwith "chunk not followed by CRLF";
                chunks (pos + n + 2))
        in
        let pos = chunks pos in
        ({ r with body = Buffer.contents b; chunked = true }, pos)
    | Some te -> failwith ("unexpected transfer coding " ^ te)
    | None -> (
        match header r "content-length" with
        | Some n ->
            let n = int_of_string n in
            if pos + n > String.length s then raise Incomplete
            else ({ r with body = String.sub s pos n }, pos + n)
        | None ->
            let n = String.length s - pos in
            ({ r with body = String.sub s pos n }, String.length s))

let parse ?(heads = []) s =
  let rec go pos final acc =
    if pos >= String.length s then (List.rev acc, "")
    else
      match parse_one s pos ~head:(List.mem final heads) with
      | r, next ->
          let final = if r.status >= 200 then final + 1 else final in
          go next final (r :: acc)
      | exception Incomplete ->
          (List.rev acc, String.sub s pos (String.length s - pos))
  in
  go 0 0 []

let finals rs = List.filter (fun r -> r.status >= 200) rs
