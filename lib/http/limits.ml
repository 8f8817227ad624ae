type t = {
  max_request_line : int;
  max_header_bytes : int;
  max_header_fields : int;
  max_body : int;
  max_chunk_line : int;
}

let default =
  {
    max_request_line = 8 * 1024;
    max_header_bytes = 64 * 1024;
    max_header_fields = 100;
    max_body = 1024 * 1024;
    max_chunk_line = 4 * 1024;
  }

let body_too_large ?source t =
  match source with
  | None -> Printf.sprintf "body too large: limit %d bytes" t.max_body
  | Some s -> Printf.sprintf "body too large: limit %d bytes (%s)" t.max_body s
