(* The workload, per input: validate -> transform -> fetch data -> call the
   outside world -> post-process the output, or do bookkeeping on failure.
   Inputs are invalid with probability [invalid], the outside world fails
   with probability [fail]. Each step burns CPU tokens: [base] for the local
   steps, [base * time_factor] for the two outside steps, which sit behind
   the async boundary. *)

open Bench_harness

let base = 10

type mix = { fail : int; invalid : int }
(** Percentages. *)

let default_mix = { fail = 10; invalid = 20 }

let other_mixes =
  [
    { fail = 25; invalid = 30 };
    { fail = 45; invalid = 30 };
    { fail = 45; invalid = 50 };
  ]

let time_factors = [ 2; 5; 100; 200 ]

type input = { valid : bool; outside_ok : bool; payload : int }

let inputs_for mix =
  let rng = Random.State.make [| 2019 |] in
  Array.init 1024 (fun payload ->
      {
        valid = Random.State.int rng 100 >= mix.invalid;
        outside_ok = Random.State.int rng 100 >= mix.fail;
        payload;
      })

(* A token is one step of a 63-bit LCG, like JMH's Blackhole.consumeCPU. *)
let consume_cpu tokens seed =
  let x = ref seed in
  for _ = 1 to tokens do
    x := (!x * 0x5851F42D4C957F2D) + 0x14057B7EF767814F
  done;
  Sys.opaque_identity !x

type error = Invalid of int | Outside_failed of int

(* How work crosses the async boundary. *)
type boundary = {
  label : string;
  across : 'a. (unit -> 'a) -> 'a;  (** Run the outside step across it. *)
  run_ops : (unit -> unit) -> unit;
      (** Run the op loop in context: [in_flight] copies of it at once where
          there is an async boundary, as an application would. *)
}

(* The three styles, sharing the step bodies. *)

module Result_style = struct
  let validate i =
    if i.valid then Ok (consume_cpu base i.payload)
    else Error (Invalid i.payload)

  let transform v = Ok (consume_cpu base v)
  let fetch ~tf b v = b.across (fun () -> Ok (consume_cpu (base * tf) v))

  let call ~tf b i v =
    b.across (fun () ->
        let r = consume_cpu (base * tf) v in
        if i.outside_ok then Ok r else Error (Outside_failed r))

  let op ~tf b i =
    let ( let* ) = Result.bind in
    let outcome =
      let* v = validate i in
      let* t = transform v in
      let* d = fetch ~tf b t in
      call ~tf b i d
    in
    match outcome with
    | Ok o -> consume_cpu base o
    | Error (Invalid x | Outside_failed x) -> consume_cpu base (x + 1)
end

module Exception_style = struct
  exception Failed of error

  let validate i =
    if i.valid then consume_cpu base i.payload
    else raise (Failed (Invalid i.payload))

  let transform v = consume_cpu base v
  let fetch ~tf b v = b.across (fun () -> consume_cpu (base * tf) v)

  let call ~tf b i v =
    b.across (fun () ->
        let r = consume_cpu (base * tf) v in
        if i.outside_ok then r else raise (Failed (Outside_failed r)))

  let op ~tf b i =
    match call ~tf b i (fetch ~tf b (transform (validate i))) with
    | o -> consume_cpu base o
    | exception Failed (Invalid x | Outside_failed x) -> consume_cpu base (x + 1)
end

module Effect_style = struct
  type _ Effect.t += Fail : error -> 'a Effect.t

  (* The handler abandons the failed computation: it discontinues it (an
     abandoned continuation's stack would never be freed) and returns. *)
  exception Abandoned

  let handle f =
    let failure = ref None in
    match
      Effect.Deep.match_with f ()
        {
          retc = (fun v -> Ok v);
          exnc =
            (function Abandoned -> Error (Option.get !failure) | e -> raise e);
          effc =
            (fun (type a) (e : a Effect.t) ->
              match e with
              | Fail err ->
                  Some
                    (fun (k : (a, _) Effect.Deep.continuation) ->
                      failure := Some err;
                      Effect.Deep.discontinue k Abandoned)
              | _ -> None);
        }
    with
    | r -> r

  let fail err = Effect.perform (Fail err)

  let validate i =
    if i.valid then consume_cpu base i.payload else fail (Invalid i.payload)

  let transform v = consume_cpu base v

  (* An effect cannot cross to another domain: the outside step handles its
     own failure and the result is re-performed on this side. *)
  let across b f =
    match b.across (fun () -> handle f) with Ok v -> v | Error e -> fail e

  let fetch ~tf b v = across b (fun () -> consume_cpu (base * tf) v)

  let call ~tf b i v =
    across b (fun () ->
        let r = consume_cpu (base * tf) v in
        if i.outside_ok then r else fail (Outside_failed r))

  let op ~tf b i =
    match
      handle (fun () -> call ~tf b i (fetch ~tf b (transform (validate i))))
    with
    | Ok o -> consume_cpu base o
    | Error (Invalid x | Outside_failed x) -> consume_cpu base (x + 1)
end

let styles =
  [
    ("result", Result_style.op);
    ("exceptions", Exception_style.op);
    ("effects", Effect_style.op);
  ]

let in_flight = 8

let concurrently loop () =
  List.init in_flight (fun _ -> Braid.Fiber.fork loop)
  |> List.iter Braid.Fiber.join

let direct =
  { label = "sync"; across = (fun f -> f ()); run_ops = (fun loop -> loop ()) }

let pool_boundary pool =
  {
    label = "pool (Future)";
    across = (fun f -> Braid_sync.Promise.await (Braid_pool.async pool f));
    run_ops = (fun loop -> Braid_fifo.run (concurrently loop));
  }

let io_boundary =
  {
    label = "io yield (IO)";
    across =
      (fun f ->
        Braid.Fiber.yield ();
        f ());
    run_ops = (fun loop -> Braid_io.run (concurrently loop));
  }

(* ns per op: each loop runs batches of 64 ops until [budget] seconds have
   passed; ops of all loops are counted. *)
let measure ~budget ~tf b inputs op =
  let n = Array.length inputs in
  let ops = ref 0 in
  let t0 = now_s () in
  b.run_ops (fun () ->
      while now_s () -. t0 < budget do
        let start = !ops in
        ops := !ops + 64;
        for k = 0 to 63 do
          ignore
            (Sys.opaque_identity (op ~tf b inputs.((start + k) land (n - 1))))
        done
      done);
  (now_s () -. t0) *. 1e9 /. float_of_int !ops

let ns_per_token () =
  let n = 10_000_000 in
  time_s (fun () -> ignore (consume_cpu n 1)) *. 1e9 /. float_of_int n

let run ~quick =
  let budget = if quick then 0.02 else 0.2
  and rounds = if quick then 1 else 3 in
  Braid_pool.with_pool ~domains:1 @@ fun pool ->
  let boundaries = [ direct; pool_boundary pool; io_boundary ] in
  let mixes = default_mix :: other_mixes in
  let configs =
    List.concat_map
      (fun mix ->
        let tfs = if mix == default_mix then time_factors else [ 5; 200 ] in
        List.concat_map
          (fun tf -> List.map (fun b -> (mix, tf, b)) boundaries)
          tfs)
      mixes
  in
  let samples = Hashtbl.create 64 in
  let key mix tf b style = (mix.fail, mix.invalid, tf, b.label, style) in
  for round = 1 to rounds do
    progress "  round %d/%d (%d configurations x 3 styles)" round rounds
      (List.length configs);
    List.iter
      (fun (mix, tf, b) ->
        let inputs = inputs_for mix in
        List.iter
          (fun (style, op) ->
            let k = key mix tf b style in
            let t = measure ~budget ~tf b inputs op in
            Hashtbl.replace samples k
              (t :: Option.value (Hashtbl.find_opt samples k) ~default:[]))
          styles)
      configs
  done;
  let rows =
    List.concat_map
      (fun (mix, tf, b) ->
        let ns style = median (Hashtbl.find samples (key mix tf b style)) in
        let label style =
          Printf.sprintf "%s, %s, timeFactor %d, fail/invalid %d/%d" style
            b.label tf mix.fail mix.invalid
        in
        let reference = ns "result" in
        List.concat_map
          (fun (style, _) ->
            [
              row (label style) "time per op" (ns style) "ns";
              row (label style) "time / result style"
                (ns style /. reference)
                "x";
            ])
          styles)
      configs
  in
  row "one CPU token" "time" (ns_per_token ()) "ns" :: rows

let experiment =
  {
    name = "error-handling";
    summary =
      "result vs exceptions vs effects, sync / pool / IO boundaries \
       (Rzeźnicki's Scala study, ported)";
    run;
  }
