open Braid_sync

let () =
  let r =
    Braid_fifo.run (fun () ->
        let mv = Mvar.create_empty () in
        let _ =
          Braid.Fiber.fork (fun () ->
              for i = 1 to 5 do
                Mvar.put mv i
              done)
        in
        let s = ref 0 in
        for _ = 1 to 5 do
          s := !s + Mvar.take mv
        done;
        !s)
  in
  Printf.printf "sum=%d\n%!" r;
  Braid_fifo.run (fun () ->
      let m = Mutex.create () in
      Mutex.lock m;
      let t1 =
        Braid.Fiber.fork (fun () ->
            Mutex.lock m;
            print_endline "t1 got lock (BAD)";
            Mutex.unlock m)
      in
      Braid.Fiber.yield ();
      Braid.Fiber.cancel t1;
      let t2 =
        Braid.Fiber.fork (fun () ->
            Mutex.lock m;
            print_endline "t2 got lock";
            Mutex.unlock m)
      in
      Braid.Fiber.yield ();
      Mutex.unlock m;
      (match Braid.Fiber.join t1 with
      | () -> print_endline "t1 ok?"
      | exception Braid.Cancelled -> print_endline "t1 cancelled");
      Braid.Fiber.join t2);
  let p = Promise.create () in
  let d =
    Domain.spawn (fun () -> Braid_fifo.run (fun () -> Promise.await p + 1))
  in
  Unix.sleepf 0.05;
  Promise.fill p 41;
  Printf.printf "domain got %d\n%!" (Domain.join d);
  let c = Channel.create 0 in
  let th =
    Thread.create
      (fun () ->
        for i = 1 to 3 do
          Channel.send c i
        done;
        Channel.close c)
      ()
  in
  let rec drain acc =
    match Channel.recv c with
    | v -> drain (v :: acc)
    | exception Channel.Closed -> List.rev acc
  in
  let got = Braid_fifo.run (fun () -> drain []) in
  Thread.join th;
  Printf.printf "chan: %s\n" (String.concat "," (List.map string_of_int got));
  (match
     Braid_fifo.run (fun () ->
         ignore (Braid.Fiber.fork (fun () -> failwith "boom"));
         1)
   with
  | _ -> print_endline "lost!"
  | exception Failure m -> print_endline ("reraised " ^ m));
  let self = ref None in
  let l = Lazy.from_fun (fun () -> Lazy.force (Option.get !self) + 1) in
  self := Some l;
  (match Braid_fifo.run (fun () -> Lazy.force l) with
  | _ -> ()
  | exception Lazy.Undefined -> print_endline "undefined ok");
  match
    Braid_fifo.run (fun () ->
        Braid.Switch.run (fun sw ->
            let _ =
              Braid.Fiber.fork ~sw (fun () -> Mvar.take (Mvar.create_empty ()))
            in
            let _ =
              Braid.Fiber.fork ~sw (fun () ->
                  Braid.Fiber.yield ();
                  failwith "child")
            in
            ()))
  with
  | () -> print_endline "no error?"
  | exception Failure m -> print_endline ("switch raised " ^ m)
