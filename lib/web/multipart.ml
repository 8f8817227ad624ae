type part = {
  name : string;
  filename : string option;
  content_type : string option;
  headers : (string * string) list;
}

type event = Part of part | Data of string | End_of_part
type limits = { max_parts : int; max_part_size : int; max_header_bytes : int }

let default_limits =
  { max_parts = 100; max_part_size = 16 * 1024 * 1024; max_header_bytes = 8192 }

exception Stop of Response.t

let stop status why = raise (Stop (Response.error status why))

(* [sub] at [i] in [s] from its [k]th byte, compared in place. The caller
   checks [i + m <= n]. *)
let rec matches_at s i sub k m =
  k = m
  || String.unsafe_get s (i + k) = String.unsafe_get sub k
     && matches_at s i sub (k + 1) m

(* The first [sub] (at least 2 bytes: a delimiter, CRLF or CRLFCRLF) in [s]
   from [from]. A candidate (a byte equal to [sub]'s first: a CR) costs no
   allocation, and its second byte is compared in the loop: contents full
   of CRs cost about what others do (a String.sub per CR made them cost 5
   to 10 times as much). *)
let find s sub from =
  let n = String.length s and m = String.length sub in
  if m < 2 then invalid_arg "Multipart.find: a pattern of at least 2 bytes";
  let first = String.unsafe_get sub 0 and second = String.unsafe_get sub 1 in
  let rec go i =
    if i + m > n then None
    else if
      String.unsafe_get s i = first
      && String.unsafe_get s (i + 1) = second
      && matches_at s i sub 2 m
    then Some i
    else go (i + 1)
  in
  go from

(* Parameters of a field value: [; name=token] or [; name="quoted"]
   (RFC 9110 §5.6.6), names lower-cased. [None] if malformed. *)
let parameters s =
  let n = String.length s in
  let rec skip_ws i =
    if i < n && (s.[i] = ' ' || s.[i] = '\t') then skip_ws (i + 1) else i
  in
  let rec token i =
    if i < n && Braid_http.Headers.is_tchar s.[i] then token (i + 1) else i
  in
  let rec params i acc =
    let i = skip_ws i in
    if i >= n then Some (List.rev acc)
    else if s.[i] <> ';' then None
    else
      let i = skip_ws (i + 1) in
      if i >= n then Some (List.rev acc)
      else
        let j = token i in
        if j = i || j >= n || s.[j] <> '=' then None
        else
          let name = String.lowercase_ascii (String.sub s i (j - i)) in
          let k = j + 1 in
          if k < n && s.[k] = '"' then
            let b = Buffer.create 16 in
            let rec quoted k =
              if k >= n then None
              else
                match s.[k] with
                | '"' -> Some (k + 1)
                | '\\' when k + 1 < n ->
                    Buffer.add_char b s.[k + 1];
                    quoted (k + 2)
                | c ->
                    Buffer.add_char b c;
                    quoted (k + 1)
            in
            match quoted (k + 1) with
            | None -> None
            | Some e -> params e ((name, Buffer.contents b) :: acc)
          else
            let e = token k in
            if e = k then None
            else params e ((name, String.sub s k (e - k)) :: acc)
  in
  (* The value before the parameters. *)
  let first = match String.index_opt s ';' with Some i -> i | None -> n in
  Option.map
    (fun p -> (String.lowercase_ascii (String.trim (String.sub s 0 first)), p))
    (params first [])

let boundary (r : Handler.request) =
  match Handler.header r "content-type" with
  | None -> None
  | Some v -> (
      match parameters v with
      | Some ("multipart/form-data", params) -> (
          match List.assoc_opt "boundary" params with
          | Some b when String.length b >= 1 && String.length b <= 70 -> Some b
          | _ -> None)
      | _ -> None)

let part_of_head head =
  let lines = String.split_on_char '\n' head in
  let headers =
    List.filter_map
      (fun line ->
        let line =
          if String.ends_with ~suffix:"\r" line then
            String.sub line 0 (String.length line - 1)
          else line
        in
        if line = "" then None
        else
          match String.index_opt line ':' with
          | Some i when Braid_http.Headers.is_name (String.sub line 0 i) ->
              let v =
                String.trim
                  (String.sub line (i + 1) (String.length line - i - 1))
              in
              if Braid_http.Headers.is_value v then Some (String.sub line 0 i, v)
              else
                stop 400 "multipart: a part's field holds a control character"
          | _ ->
              stop 400 ("multipart: malformed part field " ^ String.escaped line))
      lines
  in
  let find name =
    List.find_map
      (fun (n, v) ->
        if Braid_http.Headers.equal_name n name then Some v else None)
      headers
  in
  match Option.bind (find "content-disposition") parameters with
  | Some ("form-data", params) -> (
      match List.assoc_opt "name" params with
      | Some name ->
          {
            name;
            filename = List.assoc_opt "filename" params;
            content_type = find "content-type";
            headers;
          }
      | None -> stop 400 "multipart: a part's Content-Disposition has no name")
  | _ -> stop 400 "multipart: a part without Content-Disposition: form-data"

type state = Preamble | After_boundary | Head | Content of int

(* [f] answers [Error response] to stop reading: the body's rest is left
   unread (the server drains or closes, as for any handler that does not
   read its whole body). *)
let read ~limits (r : Handler.request) ~init f =
  let f acc event =
    match f acc event with
    | Ok acc -> acc
    | Error response -> raise (Stop response)
  in
  match boundary r with
  | None ->
      Error
        (Response.error 415
           "expected Content-Type: multipart/form-data; boundary=...")
  | Some b -> (
      let delimiter = "\r\n--" ^ b in
      let dl = String.length delimiter in
      let chunk = Bytes.create 16384 in
      (* The body as if preceded by CRLF: the first boundary is then a
         delimiter like the others. *)
      let pending = ref "\r\n" and finished = ref false in
      let more () =
        if !finished then false
        else
          match Body.read r.body chunk 0 (Bytes.length chunk) with
          | Ok 0 ->
              finished := true;
              false
          | Ok n ->
              pending := !pending ^ Bytes.sub_string chunk 0 n;
              true
          | Error e -> raise (Stop (Handler.bad_request e))
      in
      let truncated () =
        stop 400 "multipart: truncated body (no closing boundary)"
      in
      let drop n =
        pending := String.sub !pending n (String.length !pending - n)
      in
      let rec step acc state parts =
        match state with
        | Preamble -> (
            match find !pending delimiter 0 with
            | Some i ->
                drop (i + dl);
                step acc After_boundary parts
            | None ->
                if String.length !pending > limits.max_header_bytes then
                  stop 400 "multipart: no boundary where the body starts";
                if more () then step acc state parts else truncated ())
        | After_boundary -> (
            if String.length !pending < 2 then
              if more () then step acc state parts else truncated ()
            else if String.sub !pending 0 2 = "--" then acc
            else
              (* Transport padding, then CRLF. *)
              match find !pending "\r\n" 0 with
              | Some i ->
                  if
                    String.exists
                      (fun c -> c <> ' ' && c <> '\t')
                      (String.sub !pending 0 i)
                  then stop 400 "multipart: garbage after a boundary";
                  drop (i + 2);
                  if parts >= limits.max_parts then
                    stop 413
                      (Printf.sprintf "multipart: more than %d parts"
                         limits.max_parts);
                  step acc Head (parts + 1)
              | None ->
                  if String.length !pending > 256 then
                    stop 400 "multipart: garbage after a boundary";
                  if more () then step acc state parts else truncated ())
        | Head -> (
            let head_end =
              if String.starts_with ~prefix:"\r\n" !pending then Some (0, 2)
              else Option.map (fun i -> (i, i + 4)) (find !pending "\r\n\r\n" 0)
            in
            match head_end with
            | Some (i, skip) when i <= limits.max_header_bytes ->
                let part = part_of_head (String.sub !pending 0 i) in
                drop skip;
                step (f acc (Part part)) (Content 0) parts
            | Some _ ->
                stop 431 "multipart: a part's header section is too large"
            | None ->
                if String.length !pending > limits.max_header_bytes then
                  stop 431 "multipart: a part's header section is too large";
                if more () then step acc state parts else truncated ())
        | Content size -> (
            let emit acc n =
              let size = size + n in
              if size > limits.max_part_size then
                stop 413
                  (Printf.sprintf "multipart: a part above %d bytes"
                     limits.max_part_size);
              let acc =
                if n > 0 then f acc (Data (String.sub !pending 0 n)) else acc
              in
              drop n;
              (acc, size)
            in
            match find !pending delimiter 0 with
            | Some i ->
                let acc, _ = emit acc i in
                drop dl;
                step (f acc End_of_part) After_boundary parts
            | None ->
                (* Keep what may be the start of a delimiter. *)
                let safe = String.length !pending - (dl - 1) in
                let acc, size =
                  if safe > 0 then emit acc safe else (acc, size)
                in
                if more () then step acc (Content size) parts else truncated ())
      in
      match step init Preamble 0 with
      | acc -> Ok acc
      | exception Stop response -> Error response)

(* {1 The CSRF check}

   The token must be checked before anything of the form reaches [f]: the
   fields before it are held back (they are small: at most
   [max_held_before_token] bytes in all) and handed over once it is valid; a
   file before it is refused at its head, before its content is read. *)

let max_held_before_token = 64 * 1024

type gate =
  | Waiting of { held : event list; bytes : int }
      (** No token yet: the events of the fields before it, newest first. *)
  | Reading_token of { held : event list; bytes : int; token : Buffer.t }
  | Checked

let with_csrf_check r f =
  let forbidden why = Error (Response.error 403 why) in
  let step (gate, acc) event =
    match (gate, event) with
    | Checked, _ -> (
        match event with
        | Part { name; _ } when String.equal name Csrf.field_name ->
            forbidden "CSRF token: several csrf_token parts"
        | _ -> Result.map (fun acc -> (Checked, acc)) (f acc event))
    | Waiting { held; bytes }, Part { name; _ }
      when String.equal name Csrf.field_name ->
        Ok (Reading_token { held; bytes; token = Buffer.create 64 }, acc)
    | Waiting _, Part { filename = Some _; name; _ } ->
        forbidden
          (Printf.sprintf
             "CSRF token missing before the file %S: the csrf_token \
              field               (Csrf.tag) must come first in the form"
             name)
    | Waiting { held; bytes }, _ ->
        let bytes =
          bytes + match event with Data d -> String.length d | _ -> 0
        in
        if bytes > max_held_before_token then
          forbidden
            "CSRF token missing: more than 64 KiB of fields before it \
             (put              Csrf.tag first in the form)"
        else Ok (Waiting { held = event :: held; bytes }, acc)
    | Reading_token { token; _ }, Data d ->
        if Buffer.length token + String.length d > 256 then
          forbidden "CSRF token invalid: too long"
        else (
          Buffer.add_string token d;
          Ok (gate, acc))
    | Reading_token { held; token; _ }, End_of_part -> (
        match Csrf.verify r (Buffer.contents token) with
        | Error e -> Error e
        | Ok () ->
            (* The fields held back, in order, now that they are trusted. *)
            List.fold_left
              (fun acc event -> Result.bind acc (fun acc -> f acc event))
              (Ok acc) (List.rev held)
            |> Result.map (fun acc -> (Checked, acc)))
    | Reading_token _, Part _ -> assert false (* An End_of_part comes first. *)
  in
  step

let try_fold ?(limits = default_limits) ?(csrf = true) r ~init f =
  if csrf && Session.Private.in_force () then
    match
      read ~limits r
        ~init:(Waiting { held = []; bytes = 0 }, init)
        (with_csrf_check r f)
    with
    | Ok (Checked, acc) -> Ok acc
    | Ok ((Waiting _ | Reading_token _), _) ->
        Error
          (Response.error 403
             "CSRF token missing: the form has no csrf_token field (Csrf.tag)")
    | Error e -> Error e
  else read ~limits r ~init f

let fold ?limits ?csrf r ~init f =
  try_fold ?limits ?csrf r ~init (fun acc event -> Ok (f acc event))

let parts ?limits ?csrf r =
  let collect (done_, current) = function
    | Part p -> (done_, Some (p, Buffer.create 256))
    | Data s ->
        Option.iter (fun (_, b) -> Buffer.add_string b s) current;
        (done_, current)
    | End_of_part -> (
        match current with
        | Some (p, b) -> ((p, Buffer.contents b) :: done_, None)
        | None -> (done_, None))
  in
  Result.map
    (fun (l, _) -> List.rev l)
    (fold ?limits ?csrf r ~init:([], None) collect)
