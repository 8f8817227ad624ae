(* A tour of Braid: the same structures used by fibers, domains and threads.
   Run with `make run` or `dune exec examples/tour/tour.exe`. *)

open Braid_sync
module Fiber = Braid.Fiber

let section title = Printf.printf "\n-- %s\n%!" title

(* Fibers of one FIFO scheduler pass values through an MVar; the taker
   blocks only itself. *)
let fibers () =
  section "fibers and an MVar";
  let total =
    Braid_fifo.run (fun () ->
        let box = Mvar.create_empty () in
        let _producer =
          Fiber.fork (fun () -> List.iter (Mvar.put box) [ 1; 2; 3; 4; 5 ])
        in
        List.fold_left (fun acc _ -> acc + Mvar.take box) 0 [ 1; 2; 3; 4; 5 ])
  in
  Printf.printf "sum of 1..5 received: %d\n" total

(* The thesis's scenario: a cancelled waiter never gets the lock. *)
let cancellation () =
  section "cancelling a fiber blocked on a mutex";
  Braid_fifo.run (fun () ->
      let m = Mutex.create () in
      Mutex.lock m;
      let t1 =
        Fiber.fork (fun () ->
            Mutex.protect m (fun () -> print_endline "t1 got the lock"))
      in
      Fiber.yield ();
      Fiber.cancel t1;
      let t2 =
        Fiber.fork (fun () ->
            Mutex.protect m (fun () -> print_endline "t2 got the lock"))
      in
      Fiber.yield ();
      Mutex.unlock m;
      (match Fiber.join t1 with
      | () -> ()
      | exception Braid.Cancelled ->
          print_endline "t1 was cancelled while waiting");
      Fiber.join t2)

(* A fiber on another domain waits on a promise filled by the main domain,
   which has no scheduler at all. *)
let domains () =
  section "a promise across domains";
  let p = Promise.create () in
  let d =
    Domain.spawn (fun () -> Braid_fifo.run (fun () -> Promise.await p + 1))
  in
  Promise.fill p 41;
  Printf.printf "the other domain's fiber computed %d\n" (Domain.join d)

(* A systhread without any scheduler sends through a rendezvous channel to
   a fiber; closing ends the stream once it is drained. *)
let threads () =
  section "a systhread and a fiber on a channel";
  let c = Channel.create 0 in
  let sender =
    Thread.create
      (fun () ->
        List.iter (Channel.send c) [ "a"; "b"; "c" ];
        Channel.close c)
      ()
  in
  let rec drain acc =
    match Channel.recv c with
    | v -> drain (v :: acc)
    | exception Channel.Closed -> List.rev acc
  in
  let got = Braid_fifo.run (fun () -> drain []) in
  Thread.join sender;
  Printf.printf "received %s\n" (String.concat ", " got)

(* Structured concurrency: the first failure cancels the siblings. *)
let switches () =
  section "a switch";
  match
    Braid_fifo.run (fun () ->
        Braid.Switch.run (fun sw ->
            let _waits_forever =
              Fiber.fork ~sw (fun () -> Mvar.take (Mvar.create_empty ()))
            in
            let _fails =
              Fiber.fork ~sw (fun () ->
                  Fiber.yield ();
                  failwith "a child failed")
            in
            ()))
  with
  | () -> ()
  | exception Failure msg ->
      Printf.printf "Switch.run raised %S; the waiting sibling was cancelled\n"
        msg

let () =
  fibers ();
  cancellation ();
  domains ();
  threads ();
  switches ()
