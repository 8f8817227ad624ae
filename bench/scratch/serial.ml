let n = try int_of_string Sys.argv.(1) with _ -> 10_000_000

let () =
  let t0 = Unix.gettimeofday () in
  Braid_fifo.run (fun () ->
      let box = Braid_sync.Mvar.create_empty () in
      let c =
        Braid.Fiber.fork (fun () ->
            for _ = 1 to n do
              ignore (Sys.opaque_identity (Braid_sync.Mvar.take box))
            done)
      in
      for i = 1 to n do
        Braid_sync.Mvar.put box i
      done;
      Braid.Fiber.join c);
  Printf.printf "%.1f ns/msg\n" ((Unix.gettimeofday () -. t0) *. 1e9 /. float n)
