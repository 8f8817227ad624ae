(* The time Json.body takes on 1 MB bodies: the bypass of issue 39 (a comment
   hiding 499,000 "[" from a depth scan), a plain 1,000,000 "[", and a valid
   document of the same size for comparison. Medians of [runs] calls (default
   21, the first argument) of Json.body through Testing.call (the whole
   in-memory server, so the figures include the request's parsing and the
   body's copies), of Json.of_string alone, and of yojson's reader alone, which
   Json.body ran before the fix; and first, the peak RSS
   over [runs] calls of Json.body on the 1 MB bypass. *)

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

let call body =
  (Testing.call ~config ~meth:POST
     ~headers:[ ("Content-Type", "application/json") ]
     ~body app "/echo")
    .status

let peak_rss () =
  In_channel.with_open_text "/proc/self/status" In_channel.input_lines
  |> List.find_map (fun l ->
         if String.starts_with ~prefix:"VmHWM:" l then
           Scanf.sscanf l "VmHWM: %d kB" (fun k -> Some (k / 1024))
         else None)
  |> Option.value ~default:0

(* Through the server, then the reader alone, then yojson's reader alone
   (which Json.body used before, after a scan for depth). *)
let time name body runs =
  let server = median_ms runs (fun () -> ignore (call body)) in
  let reader = median_ms runs (fun () -> ignore (Json.of_string body)) in
  let yojson =
    median_ms runs (fun () ->
        try ignore (Yojson.Safe.from_string body)
        with Yojson.Json_error _ -> ())
  in
  Printf.printf
    "%-26s %7d B  status %d  Json.body %6.2f ms  Json.of_string %6.3f ms  \
     Yojson.Safe.from_string %6.2f ms\n\
     %!"
    name (String.length body) (call body) server reader yojson

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
  (* First the bypass alone, as issue 39 sent it, for the peak RSS. *)
  let before = peak_rss () in
  let t = median_ms runs (fun () -> ignore (call bypass_1mb)) in
  Printf.printf
    "%d Json.body calls on the 1 MB bypass: median %.2f ms, peak RSS %d -> %d MB\n\
     %!"
    runs t before (peak_rss ());
  time "nothing (body \"0\")" "0" runs;
  time "bypass /*\"*/ + 499,000 [" bypass runs;
  time "bypass, \"[ \" x 499,000" bypass_1mb runs;
  time "1,000,000 [" plain runs;
  time "valid 1 MB document" valid runs
