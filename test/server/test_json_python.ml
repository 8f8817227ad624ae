(* The JSON reader against Python's json module (json.loads with strict=True,
   after a strict UTF-8 decoding, NaN and Infinity refused): 10,000 texts from
   Json_gen and issue 39's bodies, judged by one python3 process
   (json_reference.py); the reader must agree on every verdict and every
   value read.

   Known, deliberate differences, each checked rather than skipped: Python
   reads escapes of lone surrogates, numbers that overflow to infinity and
   documents nested deeper than 512 (up to its recursion limit); the reader
   refuses all three (see json.mli). They are counted apart, and each must
   turn up, so that the corpus keeps testing them. *)

open Braid_web

let seeds = 10_000

let canon v =
  let b = Buffer.create 64 in
  let str s =
    Buffer.add_char b 'u';
    String.iter (fun c -> Printf.bprintf b "%02x" (Char.code c)) s;
    Buffer.add_char b ';'
  in
  let rec go = function
    | `Null -> Buffer.add_char b 'n'
    | `Bool true -> Buffer.add_char b 't'
    | `Bool false -> Buffer.add_char b 'f'
    | `Int i -> Printf.bprintf b "i%d;" i
    | `Intlit s -> Printf.bprintf b "i%s;" s
    | `Float f -> Printf.bprintf b "d%016Lx" (Int64.bits_of_float f)
    | `String s -> str s
    | `List l ->
        Buffer.add_char b '[';
        List.iter go l;
        Buffer.add_char b ']'
    | `Assoc l ->
        Buffer.add_char b '{';
        List.iter
          (fun (k, v) ->
            str k;
            go v)
          l;
        Buffer.add_char b '}'
    | `Tuple _ | `Variant _ -> Buffer.add_string b "?"
  in
  go v;
  Buffer.contents b

let python corpus =
  let file = Filename.temp_file "json_corpus" ".bin" in
  Fun.protect
    ~finally:(fun () -> Sys.remove file)
    (fun () ->
      Out_channel.with_open_bin file (fun oc ->
          List.iter
            (fun s -> Printf.fprintf oc "%d\n%s" (String.length s) s)
            corpus);
      let ic =
        Unix.open_process_args_in "python3"
          [| "python3"; "json_reference.py"; file |]
      in
      let out = In_channel.input_all ic in
      (match Unix.close_process_in ic with
      | WEXITED 0 -> ()
      | _ -> Alcotest.fail "json_reference.py failed");
      String.split_on_char '\n' out |> List.filter (( <> ) ""))

let short s =
  let s = if String.length s > 80 then String.sub s 0 80 ^ "..." else s in
  String.escaped s

let agree () =
  let corpus = Json_gen.bypasses @ List.init seeds Json_gen.document in
  let verdicts = python corpus in
  Alcotest.(check int)
    "one verdict per text" (List.length corpus) (List.length verdicts);
  let counts = Hashtbl.create 8 in
  let count k =
    Hashtbl.replace counts k
      (1 + Option.value ~default:0 (Hashtbl.find_opt counts k))
  in
  let disagreements = ref [] in
  List.iter2
    (fun s verdict ->
      let ours = Json.of_string s in
      let kind = String.sub verdict 0 1 in
      count kind;
      let wrong why =
        disagreements := Printf.sprintf "%s: %s" why (short s) :: !disagreements
      in
      match (kind, ours) with
      | "A", Ok v ->
          let c = canon v in
          if "A " ^ c <> verdict then
            wrong
              (Printf.sprintf "values differ (python %s, ours %s)" verdict c)
      | "A", Error e -> wrong ("python reads it, we refuse (" ^ e ^ ")")
      | "R", Error _ -> ()
      | ("S" | "I" | "D"), Error e ->
          (* The reason must be the known one. *)
          let expected =
            match kind with
            | "S" -> "lone surrogate"
            | "I" -> "number too large"
            | _ -> "nested more than 512 deep"
          in
          if not (Text_and_process.contains e expected) then
            wrong (Printf.sprintf "%s: refused for %S, not %S" kind e expected)
      | _, Ok v ->
          wrong (Printf.sprintf "python says %s, we read %s" kind (canon v))
      | _, Error e ->
          wrong (Printf.sprintf "python says %S (we refuse: %s)" verdict e))
    corpus verdicts;
  let n k = Option.value ~default:0 (Hashtbl.find_opt counts k) in
  Printf.printf
    "%d texts: %d read alike, %d refused by both; refused by the reader only: \
     %d lone surrogates, %d infinite numbers, %d too deep\n"
    (List.length corpus) (n "A") (n "R") (n "S") (n "I") (n "D");
  (match List.rev !disagreements with
  | [] -> ()
  | l ->
      List.iteri (fun i d -> if i < 20 then print_endline d) l;
      Alcotest.failf "%d disagreements with Python" (List.length l));
  (* The corpus must exercise both verdicts and every known difference. *)
  List.iter
    (fun (k, at_least) ->
      if n k < at_least then Alcotest.failf "only %d texts of kind %s" (n k) k)
    [ ("A", seeds / 5); ("R", seeds / 5); ("S", 10); ("I", 10); ("D", 10) ]

let () =
  Alcotest.run "json against python"
    [
      ("python", [ Alcotest.test_case "same verdicts and values" `Quick agree ]);
    ]
