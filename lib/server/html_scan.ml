let named =
  [
    ("amp", "&");
    ("lt", "<");
    ("gt", ">");
    ("quot", "\"");
    ("apos", "'");
    ("nbsp", "\xc2\xa0");
  ]

let is_digit c = c >= '0' && c <= '9'
let is_hex c = is_digit c || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')

let decode_references s =
  let n = String.length s in
  let b = Buffer.create n in
  (* The end of a run of characters satisfying [p] from [i]. *)
  let rec span p i = if i < n && p s.[i] then span p (i + 1) else i in
  let rec go i =
    if i >= n then ()
    else if s.[i] <> '&' then (
      Buffer.add_char b s.[i];
      go (i + 1))
    else
      let numeric hex start =
        let stop = span (if hex then is_hex else is_digit) start in
        let digits = String.sub s start (stop - start) in
        let code =
          if digits = "" || String.length digits > 7 then None
          else int_of_string_opt ((if hex then "0x" else "") ^ digits)
        in
        match code with
        | Some c when Uchar.is_valid c && c <> 0 ->
            Buffer.add_utf_8_uchar b (Uchar.of_int c);
            go (if stop < n && s.[stop] = ';' then stop + 1 else stop)
        | _ ->
            Buffer.add_char b '&';
            go (i + 1)
      in
      if i + 1 < n && s.[i + 1] = '#' then
        if i + 2 < n && (s.[i + 2] = 'x' || s.[i + 2] = 'X') then
          numeric true (i + 3)
        else numeric false (i + 2)
      else
        let stop =
          span
            (fun c -> (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
            (i + 1)
        in
        match List.assoc_opt (String.sub s (i + 1) (stop - i - 1)) named with
        | Some text when stop < n && s.[stop] = ';' ->
            Buffer.add_string b text;
            go (stop + 1)
        | _ ->
            Buffer.add_char b '&';
            go (i + 1)
  in
  go 0;
  Buffer.contents b

let is_space c = c = ' ' || c = '\t' || c = '\n' || c = '\r' || c = '\x0c'

(* The index of [sub] in [s] at or after [from], ASCII case-insensitively. *)
let find_ci s sub from =
  let n = String.length s and m = String.length sub in
  let rec go i =
    if i + m > n then None
    else if String.lowercase_ascii (String.sub s i m) = sub then Some i
    else go (i + 1)
  in
  go from

let attributes page =
  let n = String.length page in
  let rec span p i = if i < n && p page.[i] then span p (i + 1) else i in
  (* The attributes from [i] to the tag's '>': (attributes, index after). *)
  let rec attrs i acc =
    let i = span (fun c -> is_space c || c = '/') i in
    if i >= n then (List.rev acc, n)
    else if page.[i] = '>' then (List.rev acc, i + 1)
    else
      (* A leading '=' belongs to the name, as the tokenizer reads it. *)
      let stop =
        span (fun c -> not (is_space c || c = '/' || c = '>' || c = '=')) (i + 1)
      in
      let name = String.lowercase_ascii (String.sub page i (stop - i)) in
      let j = span is_space stop in
      let value, next =
        if j < n && page.[j] = '=' then
          let k = span is_space (j + 1) in
          if k < n && (page.[k] = '"' || page.[k] = '\'') then
            let q = page.[k] in
            let close =
              match String.index_from_opt page (k + 1) q with
              | Some c -> c
              | None -> n
            in
            (String.sub page (k + 1) (close - k - 1), min n (close + 1))
          else
            let stop = span (fun c -> not (is_space c || c = '>')) k in
            (String.sub page k (stop - k), stop)
        else ("", stop)
      in
      let acc =
        if List.mem_assoc name acc then acc
        else (name, decode_references value) :: acc
      in
      attrs next acc
  in
  let rec tags i acc =
    match String.index_from_opt page i '<' with
    | None -> List.rev acc
    | Some lt ->
        if lt + 4 <= n && String.sub page lt 4 = "<!--" then
          match find_ci page "-->" (lt + 4) with
          | Some e -> tags (e + 3) acc
          | None -> List.rev acc
        else
          let stop =
            span
              (fun c ->
                (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit c)
              (lt + 1)
          in
          if stop = lt + 1 then tags (lt + 1) acc
          else
            let name =
              String.lowercase_ascii (String.sub page (lt + 1) (stop - lt - 1))
            in
            let attributes, next = attrs stop [] in
            let acc = (name, attributes) :: acc in
            (* Raw text: a "<input" inside a script is not a tag. *)
            if name = "script" || name = "style" then
              match find_ci page ("</" ^ name) next with
              | Some e -> tags e acc
              | None -> List.rev acc
            else tags next acc
  in
  tags 0 []

let csrf_token page =
  let tags = attributes page in
  let value_of tag ~name ~field =
    List.find_map
      (fun (t, attrs) ->
        if t = tag && List.assoc_opt "name" attrs = Some name then
          List.assoc_opt field attrs
        else None)
      tags
  in
  match value_of "input" ~name:"csrf_token" ~field:"value" with
  | Some v -> Some v
  | None -> value_of "meta" ~name:"csrf-token" ~field:"content"
