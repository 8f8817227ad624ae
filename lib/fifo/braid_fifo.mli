(** A FIFO fiber scheduler on the calling domain.

    Fibers run one at a time on the domain that called {!run}, in the order they
    became runnable. A fiber blocked on a Braid structure waits alone: the
    others keep running. Resumers may be called from any domain or systhread;
    they wake the scheduler if it is parked.
    {[
      Braid_fifo.run (fun () ->
          let mv = Braid_sync.Mvar.create_empty () in
          let _ = Braid.Fiber.fork (fun () -> Braid_sync.Mvar.put mv "hello") in
          print_endline (Braid_sync.Mvar.take mv))
    ]} *)

val run : (unit -> 'a) -> 'a
(** [run main] runs [main] as the first fiber and returns its result once every
    fiber forked under it has finished.

    Failures are never silently lost: if [main] raised, or a forked fiber raised
    and was never {!Braid.Fiber.join}ed, [run] re-raises that exception after
    all fibers have finished, or {!Braid.Fiber.Multiple} with all of them (in
    order) if there were several.

    When every fiber is blocked, the domain spins briefly then sleeps until a
    resumer wakes it. If nothing ever does, [run] does not return. *)
