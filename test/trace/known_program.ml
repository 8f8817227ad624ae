(* A program whose trace the tests know in advance: a fiber forked, a wait
   on a promise, a timer, a pool task on another domain. Run with BRAID_TRACE
   set by test_trace.ml. *)

let () =
  Braid_pool.with_pool ~domains:1 (fun pool ->
      Braid_io.run (fun () ->
          let half = Braid_sync.Promise.create () in
          let _ : unit Braid.Fiber.handle =
            Braid.Fiber.fork (fun () ->
                Braid_io.Time.sleep 0.01;
                Braid_sync.Promise.fill half 21)
          in
          let v = Braid_sync.Promise.await half in
          let doubled =
            Braid_sync.Promise.await (Braid_pool.async pool (fun () -> v * 2))
          in
          if doubled <> 42 then failwith "known_program: wrong answer"))
