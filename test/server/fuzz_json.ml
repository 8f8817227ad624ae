(* Crowbar fuzz test of the JSON reader (Json.of_string). In the default
   (quickcheck) mode it runs a bounded number of random cases; under afl-fuzz
   it explores for as long as it is given.

   For every input: no exception escapes; a document read is no deeper than
   the limit, and is refused under a limit one less than its depth; its
   strings are UTF-8; printed by yojson it reads back to the same value; and
   yojson's own (laxer) reader reads the same value from it. *)

open Braid_web

let rec depth = function
  | `List l -> 1 + List.fold_left (fun d v -> max d (depth v)) 0 l
  | `Assoc l -> 1 + List.fold_left (fun d (_, v) -> max d (depth v)) 0 l
  | _ -> 0

let rec strings_ok = function
  | `String s -> String.is_valid_utf_8 s
  | `List l -> List.for_all strings_ok l
  | `Assoc l ->
      List.for_all (fun (k, v) -> String.is_valid_utf_8 k && strings_ok v) l
  | `Null | `Bool _ | `Int _ | `Intlit _ -> true
  | `Float f -> Float.is_finite f
  | `Tuple _ | `Variant _ -> false

let pp_json f v = Format.pp_print_string f (Yojson.Safe.to_string v)

let check s limit =
  (match Json.of_string ~max_depth:limit s with
  | Ok v -> Crowbar.check (depth v <= limit)
  | Error _ -> ());
  match Json.of_string s with
  | Error e ->
      Crowbar.check
        (String.starts_with ~prefix:"at byte " e || e = "empty document")
  | Ok v -> (
      let d = depth v in
      Crowbar.check (d <= Json.max_depth);
      Crowbar.check (strings_ok v);
      (match Json.of_string ~max_depth:d s with
      | Ok v' -> Crowbar.check_eq ~pp:pp_json v v'
      | Error e -> Crowbar.failf "refused under its own depth %d: %s" d e);
      (if d > 0 then
         match Json.of_string ~max_depth:(d - 1) s with
         | Ok _ -> Crowbar.failf "read under depth %d, being %d deep" (d - 1) d
         | Error _ -> ());
      (match Json.of_string (Yojson.Safe.to_string v) with
      | Ok v' -> Crowbar.check_eq ~pp:pp_json v v'
      | Error e -> Crowbar.failf "printed, refused: %s" e);
      match Yojson.Safe.from_string s with
      | v' -> Crowbar.check_eq ~pp:pp_json v v'
      | exception Yojson.Json_error e -> Crowbar.failf "yojson refuses it: %s" e
      )

let text =
  Crowbar.(
    choose
      [
        bytes;
        map [ int ] Json_gen.document;
        map [ int; int ] (fun a b -> Json_gen.document a ^ Json_gen.document b);
        map [ bytes; int ] (fun b a -> b ^ Json_gen.document a);
      ])

let () =
  (* The bypass bodies once each, whatever the random cases. *)
  List.iter (fun s -> check s Json.max_depth) Json_gen.bypasses;
  Crowbar.add_test ~name:"Json.of_string" Crowbar.[ text; range 8 ] check
