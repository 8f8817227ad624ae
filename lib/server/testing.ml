open Braid_web
open Braid_web.Private

type response = {
  status : int;
  headers : (string * string) list;
  body : string;
}

let headers r name =
  List.filter_map
    (fun (n, v) ->
      if Braid_http.Headers.equal_name n name then Some v else None)
    r.headers

let header r name = match headers r name with v :: _ -> Some v | [] -> None

let request_bytes ~meth ~headers ~body target =
  let b = Buffer.create 256 in
  Printf.bprintf b "%s %s HTTP/1.1\r\n"
    (Braid_http.Method.to_string meth)
    target;
  let has name =
    List.exists (fun (n, _) -> Braid_http.Headers.equal_name n name) headers
  in
  if not (has "host") then Buffer.add_string b "Host: test\r\n";
  List.iter (fun (n, v) -> Printf.bprintf b "%s: %s\r\n" n v) headers;
  (match body with
  | Some s when not (has "content-length" || has "transfer-encoding") ->
      Printf.bprintf b "Content-Length: %d\r\n" (String.length s)
  | _ -> ());
  Buffer.add_string b "Connection: close\r\n\r\n";
  Option.iter (Buffer.add_string b) body;
  Buffer.contents b

(* [find s sub from]: the first index of [sub] in [s] at or after [from]. *)
let find s sub from =
  let n = String.length s and m = String.length sub in
  let rec go i =
    if i + m > n then None
    else if String.sub s i m = sub then Some i
    else go (i + 1)
  in
  go from

let fail fmt = Printf.ksprintf failwith ("Braid_server.Testing.call: " ^^ fmt)

(* The server's own framing: a head, then a length, chunks, or the rest. *)
let parse ~head_only s =
  match find s "\r\n\r\n" 0 with
  | None -> fail "no complete head in %S" s
  | Some h -> (
      let lines = String.split_on_char '\n' (String.sub s 0 h) in
      let lines = List.map (fun l -> String.trim l) lines in
      let status =
        match lines with
        | l :: _ -> (
            match String.split_on_char ' ' l with
            | _ :: code :: _ -> int_of_string code
            | _ -> fail "bad status line %S" l)
        | [] -> fail "empty head"
      in
      let headers =
        List.filter_map
          (fun l ->
            match String.index_opt l ':' with
            | Some i ->
                Some
                  ( String.sub l 0 i,
                    String.trim (String.sub l (i + 1) (String.length l - i - 1))
                  )
            | None -> None)
          (List.tl lines)
      in
      let r = { status; headers; body = "" } in
      let rest = String.sub s (h + 4) (String.length s - h - 4) in
      if head_only || status = 204 || status = 304 then r
      else if header r "transfer-encoding" = Some "chunked" then (
        let b = Buffer.create (String.length rest) in
        let rec chunks pos =
          match find rest "\r\n" pos with
          | None -> fail "truncated chunked body"
          | Some e ->
              let size =
                int_of_string
                  ("0x" ^ String.trim (String.sub rest pos (e - pos)))
              in
              if size > 0 then (
                Buffer.add_string b (String.sub rest (e + 2) size);
                chunks (e + 2 + size + 2))
        in
        chunks 0;
        { r with body = Buffer.contents b })
      else
        match header r "content-length" with
        | Some n ->
            let n = int_of_string n in
            if String.length rest < n then fail "truncated body";
            { r with body = String.sub rest 0 n }
        | None -> { r with body = rest })

let call ?(meth = Braid_http.Method.GET) ?(headers = []) ?body
    ?(config = Config.default) ?memory router target =
  let memory =
    match memory with Some m -> m | None -> In_memory.create ~router ()
  in
  let input = ref (request_bytes ~meth ~headers ~body target) in
  let read buf off len =
    let n = min len (String.length !input) in
    Bytes.blit_string !input 0 buf off n;
    input := String.sub !input n (String.length !input - n);
    n
  in
  let out = Buffer.create 1024 in
  let write buf off len = Buffer.add_subbytes out buf off len in
  let services =
    {
      (In_memory.services memory) with
      find_handler = Router.lookup router;
      middleware = Router.wrap router;
      error_page = Router.render_error router;
      largest_max_body = Router.largest_max_body router;
    }
  in
  let transport : Pipeline.transport =
    { peer = None; read; write; await_input = None; file_sender = None }
  in
  ignore
    (Services.run services (fun () ->
         Pipeline.serve
           (Pipeline.create
              (Pipeline.standalone config (Head_cache.create ()))
              transport services))
      : Pipeline.outcome);
  parse ~head_only:(meth = HEAD) (Buffer.contents out)
