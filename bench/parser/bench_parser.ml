(* Braid's request parser against Angstrom on the same grammar, on a
   stream of pipelined browser requests fed whole, in 64-byte and in 1-byte
   chunks. Both sides read every request with its body and pass it to the
   same kind of callback. *)

open Bench_harness
open Braid_http

let limits = Limits.default

(* [Stdlib.min] is polymorphic: a call to the generic comparison. *)
let min (a : int) b = if a < b then a else b

(* A keep-alive connection's worth: the corpus ten times over. *)
let copies = 10

let stream =
  String.concat "" (List.concat (List.init copies (fun _ -> Corpus.requests)))

let requests_per_pass = copies * List.length Corpus.requests

type feeding = Whole | Chunks of int

let feeding_name = function
  | Whole -> "whole"
  | Chunks n -> Printf.sprintf "%d-byte chunks" n

(* {1 Braid} *)

let braid_requests on_request input =
  let rec loop () =
    match Request_parser.read_request input limits with
    | Ok r ->
        (match r.body with
        | No_body -> on_request r "" Headers.empty
        | Content_length _ | Chunked -> (
            let body = Request_body.create input limits r.body in
            match Request_body.to_string body with
            | Ok b -> on_request r b (Request_body.trailers body)
            | Error e -> failwith (Format.asprintf "%a" Parse_error.pp e)));
        loop ()
    | Error Eof -> ()
    | Error (Invalid e) -> failwith (Format.asprintf "%a" Parse_error.pp e)
  in
  loop ()

let braid_pass feeding on_request =
  match feeding with
  | Whole -> Input.with_string stream (braid_requests on_request)
  | Chunks n ->
      let offset = ref 0 in
      let read buf off len =
        let k = min n (min len (String.length stream - !offset)) in
        Bytes.blit_string stream !offset buf off k;
        offset := !offset + k;
        k
      in
      Input.with_reader read (braid_requests on_request)

(* {1 Angstrom} *)

let chunks_of feeding =
  match feeding with
  | Whole -> [| stream |]
  | Chunks n ->
      Array.init
        ((String.length stream + n - 1) / n)
        (fun i ->
          String.sub stream (i * n) (min n (String.length stream - (i * n))))

let angstrom_pass chunks on_request =
  let open Angstrom.Buffered in
  let state = ref (parse (Angstrom_http.stream limits on_request)) in
  Array.iter (fun c -> state := feed !state (`String c)) chunks;
  match feed !state `Eof with
  | Done (_, ()) -> ()
  | Fail (_, marks, msg) -> failwith (String.concat " > " marks ^ ": " ^ msg)
  | Partial _ -> failwith "angstrom: partial at end of input"

(* {1 Same answers} *)

let describe meth target version headers keep_alive expect body trailers =
  let fields l = String.concat "; " (List.map (fun (n, v) -> n ^ ": " ^ v) l) in
  Printf.sprintf "%s %s %s [%s] %b %b %S [%s]" (Method.to_string meth) target
    (Request.version_to_string version)
    (fields headers) keep_alive expect body (fields trailers)

let check_same_answers () =
  List.iter
    (fun feeding ->
      let braid = ref [] and angstrom = ref [] in
      braid_pass feeding (fun r body trailers ->
          braid :=
            describe r.meth r.target r.version
              (Headers.to_list r.headers)
              r.keep_alive r.expect_continue body (Headers.to_list trailers)
            :: !braid);
      angstrom_pass (chunks_of feeding) (fun (r : Angstrom_http.request) ->
          angstrom :=
            describe r.meth r.target r.version r.headers r.keep_alive
              r.expect_continue r.body r.trailers
            :: !angstrom);
      if List.length !braid <> requests_per_pass || !braid <> !angstrom then
        failwith ("parser bench: the parsers disagree, " ^ feeding_name feeding))
    [ Whole; Chunks 64; Chunks 1 ]

(* {1 Measurement} *)

(* The callbacks only count, so that both sides do the same work after
   parsing. *)
let seen = ref 0

(* ns/request, minor words/request and all words/request of [passes]
   passes. *)
let measure passes pass =
  Gc.compact ();
  let minor0, promoted0, major0 = Gc.counters () in
  let t =
    time_s (fun () ->
        for _ = 1 to passes do
          pass ()
        done)
  in
  let minor1, promoted1, major1 = Gc.counters () in
  let n = float_of_int (passes * requests_per_pass) in
  ( t *. 1e9 /. n,
    (minor1 -. minor0) /. n,
    (minor1 -. minor0 +. (major1 -. major0) -. (promoted1 -. promoted0)) /. n )

(* Enough passes for [target_s] seconds per sample. *)
let calibrate target_s pass =
  let t = time_s pass in
  max 1 (int_of_float (target_s /. Float.max t 1e-6))

let run ~quick =
  check_same_answers ();
  let samples = if quick then 5 else 7 in
  let target_s = if quick then 0.05 else 0.25 in
  List.concat_map
    (fun feeding ->
      let name = feeding_name feeding in
      let chunks = chunks_of feeding in
      let braid () = braid_pass feeding (fun _ _ _ -> incr seen) in
      let angstrom () = angstrom_pass chunks (fun _ -> incr seen) in
      let stats pass =
        let passes = calibrate target_s pass in
        let runs = List.init samples (fun _ -> measure passes pass) in
        let pick f = median (List.map f runs) in
        ( pick (fun (t, _, _) -> t),
          pick (fun (_, w, _) -> w),
          pick (fun (_, _, a) -> a) )
      in
      progress "parser: %s" name;
      let b_ns, b_minor, b_all = stats braid in
      let a_ns, a_minor, a_all = stats angstrom in
      [
        row ("braid " ^ name) "time" b_ns "ns/request";
        row ("angstrom " ^ name) "time" a_ns "ns/request";
        ratio ("angstrom / braid time, " ^ name) (a_ns /. b_ns);
        row ("braid " ^ name) "minor words" b_minor "words/request";
        row ("angstrom " ^ name) "minor words" a_minor "words/request";
        ratio ("angstrom / braid minor words, " ^ name) (a_minor /. b_minor);
        row ("braid " ^ name) "all words" b_all "words/request";
        row ("angstrom " ^ name) "all words" a_all "words/request";
      ])
    [ Whole; Chunks 64; Chunks 1 ]

let experiment =
  {
    name = "parser";
    summary =
      "HTTP request parser: Braid (effects) vs Angstrom, whole/64/1-byte \
       chunks: ns and words per request";
    run;
  }
