open Braid_http

type feeding = Whole | Chunks of int | Sizes of int list

let feeding_name = function
  | Whole -> "whole"
  | Chunks n -> Printf.sprintf "%d-byte chunks" n
  | Sizes _ -> "random chunks"

let describe_request (r : Request.t) =
  Printf.sprintf "%s %s %s %s %s%s%s [%s]" (Method.to_string r.meth) r.target
    (match r.target_form with
    | Origin_form -> "origin"
    | Absolute_form -> "absolute"
    | Authority_form -> "authority"
    | Asterisk_form -> "asterisk")
    (Request.version_to_string r.version)
    (match r.body with
    | No_body -> "no-body"
    | Content_length n -> Printf.sprintf "length=%d" n
    | Chunked -> "chunked")
    (if r.keep_alive then " keep-alive" else " close")
    (if r.expect_continue then " 100-continue" else "")
    (String.concat "; "
       (List.map (fun (n, v) -> n ^ ": " ^ v) (Headers.to_list r.headers)))

let split n s =
  let rec go i acc =
    if i >= String.length s then List.rev acc
    else
      let len = min n (String.length s - i) in
      go (i + len) (String.sub s i len :: acc)
  in
  go 0 []

let read_all limits input =
  let rec loop acc =
    match Request_parser.read_request input limits with
    | Error Eof -> List.rev ("eof" :: acc)
    | Error (Invalid e) ->
        let line = Format.asprintf "error %a" Parse_error.pp e in
        if e.close then List.rev (line :: acc) else loop (line :: acc)
    | Ok r -> (
        let body = Request_body.create input limits r.body in
        match Request_body.to_string body with
        | Error e ->
            List.rev
              (Format.asprintf "%s / body error %a" (describe_request r)
                 Parse_error.pp e
              :: acc)
        | Ok b ->
            let trailers = Request_body.trailers body in
            let line =
              Printf.sprintf "%s body=%S trailers=[%s]" (describe_request r) b
                (String.concat "; "
                   (List.map
                      (fun (n, v) -> n ^ ": " ^ v)
                      (Headers.to_list trailers)))
            in
            loop (line :: acc))
  in
  loop []

let parse_stream ?(limits = Limits.default) ?(max_refills = max_int) feeding s =
  let refills = ref 0 in
  let count () =
    incr refills;
    if !refills > max_refills then failwith "too many refills"
  in
  let offset = ref 0 in
  let sizes =
    match feeding with
    | Whole -> [| max_int |]
    | Chunks n -> [| n |]
    | Sizes [] -> [| 1 |]
    | Sizes l -> Array.of_list (List.map (max 1) l)
  in
  let next = ref 0 in
  let read buf off len =
    count ();
    let n = min len (min sizes.(!next) (String.length s - !offset)) in
    next := (!next + 1) mod Array.length sizes;
    Bytes.blit_string s !offset buf off n;
    offset := !offset + n;
    n
  in
  let lines =
    match feeding with
    | Whole ->
        Input.with_string s (fun input ->
            Input.handle input
              (fun _ _ _ ->
                count ();
                0)
              (fun () -> read_all limits input))
    | Chunks _ | Sizes _ -> Input.with_reader read (read_all limits)
  in
  (lines, !refills)
