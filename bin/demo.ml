open Braid_web

let reverse (r : Handler.request) =
  match Handler.body_string r with
  | Error e -> Response.error e.status e.reason
  | Ok body ->
      let n = String.length body in
      Response.string ~content_type:"application/octet-stream"
        (String.init n (fun i -> String.unsafe_get body (n - 1 - i)))

let fib_limit = 35

let rec sequential_fib n =
  if n < 2 then n else sequential_fib (n - 1) + sequential_fib (n - 2)

(* Below the cut-off a task is too small to be worth stealing. *)
let rec parallel_fib pool n =
  if n < 20 then sequential_fib n
  else
    let a = Braid_pool.async pool (fun () -> parallel_fib pool (n - 1)) in
    let b = parallel_fib pool (n - 2) in
    Braid_sync.Promise.await a + b

let fib pool (r : Handler.request) =
  match Option.bind (Handler.param r "n") int_of_string_opt with
  | Some n when n >= 0 && n <= fib_limit ->
      let result =
        Braid_sync.Promise.await
          (Braid_pool.async pool (fun () -> parallel_fib pool n))
      in
      Response.string (string_of_int result ^ "\n")
  | _ ->
      Response.error 400
        (Printf.sprintf "n must be an integer from 0 to %d" fib_limit)

let sleep_limit = 60_000

let sleep (r : Handler.request) =
  match Option.bind (Handler.param r "ms") int_of_string_opt with
  | Some ms when ms >= 0 && ms <= sleep_limit ->
      Services.sleep (float_of_int ms /. 1000.);
      Response.string (Printf.sprintf "slept %d ms\n" ms)
  | _ ->
      Response.error 400
        (Printf.sprintf "ms must be an integer from 0 to %d" sleep_limit)

let routes pool router =
  router
  |> Router.add POST "/reverse" reverse
  |> Router.add GET "/fib/:n" (fib pool)
  |> Router.add GET "/sleep/:ms" sleep
