(* The time Json.body takes on 1 MB bodies: the bypass of issue 39 (a comment
   hiding 499,000 "[" from a depth scan), a plain 1,000,000 "[", and a valid
   document of the same size for comparison. Medians of [runs] calls (default
   21, the first argument) of Json.body through Testing.call (the whole
   in-memory server, so the figures include the request's parsing and the
   body's copies), of Json.of_string alone, and of yojson's reader alone, which
   Json.body ran before the fix; then the heap's top and the peak RSS (yojson's
   reader included: it recurses once per level). *)

open Braid_server
open Handler.Syntax

let app =
  Router.(
    empty
    |> post "/echo" (fun r ->
           let* _ = Json.body r in
           Response.string "ok"))

let config =
  {
    Config.default with
    limits = { Config.default.limits with max_body = 2_000_000 };
  }

let median l =
  let a = Array.of_list l in
  Array.sort compare a;
  a.(Array.length a / 2)

let median_ms runs f =
  let times =
    List.init runs (fun _ ->
        let t0 = Unix.gettimeofday () in
        f ();
        Unix.gettimeofday () -. t0)
  in
  1000. *. median times

(* Through the server, then the reader alone, then yojson's reader alone
   (which Json.body used before, after a scan for depth). *)
let time name body runs =
  let status = ref 0 in
  let call () =
    let r =
      Testing.call ~config ~meth:POST
        ~headers:[ ("Content-Type", "application/json") ]
        ~body app "/echo"
    in
    status := r.status
  in
  let server = median_ms runs call in
  let reader = median_ms runs (fun () -> ignore (Json.of_string body)) in
  let yojson =
    median_ms runs (fun () ->
        try ignore (Yojson.Safe.from_string body)
        with Yojson.Json_error _ -> ())
  in
  Printf.printf
    "%-26s %7d B  status %d  Json.body %7.2f ms  Json.of_string %7.3f ms  \
     Yojson.Safe.from_string %7.2f ms\n\
     %!"
    name (String.length body) !status server reader yojson

let () =
  let runs = try int_of_string Sys.argv.(1) with _ -> 21 in
  let bypass = {|/*"*/|} ^ String.make 499_000 '[' in
  let bypass_1mb =
    {|/*"*/|} ^ String.concat "" (List.init 499_000 (fun _ -> "[ "))
  in
  let plain = String.make 1_000_000 '[' in
  let valid =
    let item = {|{"id":12345,"name":"caf\u00e9 \"x\"","v":[1.5,true,null]},|} in
    let n = 1_000_000 / String.length item in
    "[" ^ String.concat "" (List.init n (fun _ -> item)) ^ "0]"
  in
  let empty = Testing.call ~config ~meth:POST ~body:"0" app "/echo" in
  ignore empty;
  time "nothing (body \"0\")" "0" runs;
  time "bypass /*\"*/ + 499,000 [" bypass runs;
  time "bypass, \"[ \" x 499,000" bypass_1mb runs;
  time "1,000,000 [" plain runs;
  time "valid 1 MB document" valid runs;
  Printf.printf "top heap: %d MB\n"
    ((Gc.quick_stat ()).top_heap_words * (Sys.word_size / 8) / 1_000_000);
  (* The peak resident set, stacks included (yojson's parser recurses). *)
  In_channel.with_open_text "/proc/self/status" In_channel.input_lines
  |> List.iter (fun l ->
         if String.starts_with ~prefix:"VmHWM" l then print_endline l)
