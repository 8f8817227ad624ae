(* CPU time of Multipart.fold over one 1 MB part, by content: each CR is a
   candidate start of the delimiter ("\r\n--boundary"). Prints the median of
   [runs] parses, in milliseconds, and the minor words of one. *)

open Braid_server

let boundary = "----braidbench7MA4YWxkTrZu0gW"
let ct = [ ("Content-Type", "multipart/form-data; boundary=" ^ boundary) ]

let body content =
  "--" ^ boundary ^ "\r\n"
  ^ {|Content-Disposition: form-data; name="f"; filename="f.bin"|} ^ "\r\n\r\n"
  ^ content ^ "\r\n--" ^ boundary ^ "--\r\n"

let parse body =
  match
    Multipart.fold
      ~limits:{ Multipart.default_limits with max_part_size = 2_000_000 }
      (Handler.request_for_test ~meth:POST ~headers:ct ~body "/") ~init:0
      (fun n -> function
      | Data d -> n + String.length d
      | _ -> n)
  with
  | Ok n -> n
  | Error _ -> failwith "refused"

let measure name content ~runs =
  let body = body content in
  let words = Gc.minor_words () in
  ignore (parse body : int);
  let words = Gc.minor_words () -. words in
  let times =
    Array.init runs (fun _ ->
        let t = Sys.time () in
        ignore (parse body : int);
        Sys.time () -. t)
  in
  Array.sort compare times;
  Printf.printf
    "%-8s %7.2f ms CPU per 1 MB part (median of %d), %.0f minor words\n" name
    (times.(runs / 2) *. 1000.)
    runs words

let () =
  let runs = try int_of_string Sys.argv.(1) with _ -> 51 in
  let size = 1_000_000 in
  Random.init 39;
  measure "random" (String.init size (fun _ -> Char.chr (Random.int 256))) ~runs;
  measure "x" (String.make size 'x') ~runs;
  measure "CR" (String.make size '\r') ~runs;
  measure "CRLF"
    (String.concat "" (List.init (size / 2) (fun _ -> "\r\n")))
    ~runs
