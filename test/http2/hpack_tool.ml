(* One HPACK context over a stream of lines, for cross_check_hpack.py.

   hpack_tool decode: each line is a field block in hex; prints the fields
   as NAME:VALUE pairs (both in hex) separated by commas, or "error ...".
   hpack_tool encode: each line is such a list of pairs; prints the block
   in hex. Names and values travel in hex so any byte survives. *)

open Braid_http2

let of_hex s =
  String.init
    (String.length s / 2)
    (fun i -> Char.chr (int_of_string ("0x" ^ String.sub s (2 * i) 2)))

let to_hex s =
  String.concat ""
    (List.init (String.length s) (fun i ->
         Printf.sprintf "%02x" (Char.code s.[i])))

let fields_of_line line =
  if line = "" then []
  else
    List.map
      (fun pair ->
        match String.split_on_char ':' pair with
        | [ n; v ] -> (of_hex n, of_hex v)
        | _ -> failwith ("bad pair " ^ pair))
      (String.split_on_char ',' line)

let line_of_fields fields =
  String.concat "," (List.map (fun (n, v) -> to_hex n ^ ":" ^ to_hex v) fields)

let () =
  let each f =
    try
      while true do
        print_endline (f (input_line stdin));
        flush stdout
      done
    with End_of_file -> ()
  in
  match Sys.argv with
  | [| _; "decode" |] ->
      let d = Hpack.Decoder.create () in
      each (fun line ->
          match Hpack.Decoder.decode_string d (of_hex line) with
          | Ok h ->
              line_of_fields
                (List.map
                   (fun (f : Hpack.field) -> (f.name, f.value))
                   (h.pseudo @ h.regular))
          | Error e -> Format.asprintf "error %a" Hpack.Decoder.pp_error e)
  | [| _; "encode" |] ->
      let e = Hpack.Encoder.create () in
      each (fun line ->
          let b = Buffer.create 256 in
          Hpack.Encoder.encode e b (fields_of_line line);
          to_hex (Buffer.contents b))
  | _ ->
      prerr_endline "usage: hpack_tool (decode|encode)";
      exit 2
