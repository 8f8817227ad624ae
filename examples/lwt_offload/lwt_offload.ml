(* An Lwt program that keeps Lwt_main.run on the main domain, offloads CPU
   work to the Braid pool, and talks to Braid IO fibers on another domain
   through Braid channels. Run with
     dune exec examples/lwt_offload/lwt_offload.exe *)

open Lwt.Syntax
open Braid_sync

let rec fib n = if n < 2 then n else fib (n - 1) + fib (n - 2)

(* Braid side, in direct style: two fibers of an event loop serve requests
   from Lwt. They first wait for an Lwt promise (the greeting), then reply to
   each request after some simulated IO. *)
let serve bridge ~greeting ~requests ~replies =
  Braid_io.run @@ fun () ->
  let greeting = Braid_lwt.await_lwt bridge greeting in
  Braid_io.Switch.run @@ fun sw ->
  for worker = 1 to 2 do
    Braid_io.Fiber.fork ~sw (fun () ->
        try
          while true do
            let name = Channel.recv requests in
            Braid_io.Time.sleep 0.02;
            Channel.send replies
              (Printf.sprintf "%s, %s (from IO fiber %d)" greeting name worker)
          done
        with Channel.Closed -> ())
    |> ignore
  done

let () =
  let pool = Braid_pool.create ~domains:1 () in
  let bridge = Braid_lwt.create () in
  let greeting, set_greeting = Lwt.wait () in
  let requests = Channel.create 4 and replies = Channel.create 4 in
  let io = Domain.spawn (fun () -> serve bridge ~greeting ~requests ~replies) in
  Lwt_main.run
    (let t0 = Unix.gettimeofday () in
     let say fmt =
       Printf.ksprintf
         (fun s ->
           Lwt_io.printlf "[%4.0f ms] %s"
             ((Unix.gettimeofday () -. t0) *. 1000.)
             s)
         fmt
     in
     (* CPU work goes to the pool; Lwt only waits for the promises. *)
     let offload =
       Lwt_list.iter_p
         (fun n ->
           let* v =
             Braid_lwt.Promise.await bridge
               (Braid_pool.async pool (fun () -> fib n))
           in
           say "pool: fib %d = %d" n v)
         [ 30; 33; 35 ]
     in
     (* Meanwhile Lwt's loop stays free: a ticker keeps running. *)
     let rec tick i =
       if i > 5 then Lwt.return_unit
       else
         let* () = say "lwt: tick %d" i in
         let* () = Lwt_unix.sleep 0.05 in
         tick (i + 1)
     in
     (* Messages to and from the IO fibers on the other domain. *)
     let chat =
       let* () = Lwt_unix.sleep 0.01 in
       Lwt.wakeup set_greeting "Hello";
       let names = [ "Ada"; "Brian"; "Grace"; "Ken" ] in
       let send =
         Lwt_list.iter_s (Braid_lwt.Channel.send bridge requests) names
       in
       let rec receive n =
         if n = 0 then Lwt.return_unit
         else
           let* reply = Braid_lwt.Channel.recv bridge replies in
           let* () = say "lwt got: %s" reply in
           receive (n - 1)
       in
       let+ () = Lwt.join [ send; receive (List.length names) ] in
       Channel.close requests
     in
     Lwt.join [ offload; tick 1; chat ]);
  Domain.join io;
  Braid_pool.shutdown pool
