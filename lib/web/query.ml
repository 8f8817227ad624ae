let decode_part s =
  (* A raw '+' is a space; "%2B" decodes to '+' afterwards. *)
  let s =
    if String.contains s '+' then String.map (function '+' -> ' ' | c -> c) s
    else s
  in
  Braid_http.Url_path.percent_decode s

let decode q =
  let pairs = String.split_on_char '&' q in
  let rec go acc = function
    | [] -> Ok (List.rev acc)
    | "" :: rest -> go acc rest
    | pair :: rest -> (
        let name, value =
          match String.index_opt pair '=' with
          | Some i ->
              ( String.sub pair 0 i,
                String.sub pair (i + 1) (String.length pair - i - 1) )
          | None -> (pair, "")
        in
        match (decode_part name, decode_part value) with
        | Ok n, Ok v -> go ((n, v) :: acc) rest
        | Error _, _ | _, Error _ ->
            Error (Printf.sprintf "malformed percent-encoding in %S" pair))
  in
  go [] pairs

let bad_request why = Response.error 400 why

let params (r : Handler.request) =
  match r.query with
  | None -> Ok []
  | Some q -> (
      match decode q with
      | Ok p -> Ok p
      | Error why -> Error (bad_request ("query: " ^ why)))

let get r name = Result.map (List.assoc_opt name) (params r)

let get_all r name =
  Result.map
    (List.filter_map (fun (n, v) ->
         if String.equal n name then Some v else None))
    (params r)

let encode_part s =
  let b = Buffer.create (String.length s) in
  String.iter
    (fun c ->
      match c with
      | 'A' .. 'Z' | 'a' .. 'z' | '0' .. '9' | '*' | '-' | '.' | '_' ->
          Buffer.add_char b c
      | ' ' -> Buffer.add_char b '+'
      | c -> Printf.bprintf b "%%%02X" (Char.code c))
    s;
  Buffer.contents b

let encode pairs =
  String.concat "&"
    (List.map (fun (n, v) -> encode_part n ^ "=" ^ encode_part v) pairs)
