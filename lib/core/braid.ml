(* Every Braid program honours BRAID_TRACE (docs/tracing.md): this module is
   linked into all of them. *)
let () = Braid_trace.start_from_environment ()

type 'a resumer = 'a Suspend.resumer
type _ Effect.t += Suspend = Suspend.Suspend

let suspend = Suspend.suspend

exception Cancelled = Suspend.Cancelled

module Fiber = struct
  include Fiber

  let fork ?sw f =
    match sw with None -> Fiber.fork f | Some sw -> Switch.fork sw f

  let all fs =
    Switch.run (fun sw -> List.iter (fun f -> ignore (Switch.fork sw f)) fs)

  let both f g =
    (* The switch's end orders the child's write before our read. *)
    let first = ref None in
    let second =
      Switch.run (fun sw ->
          ignore (Switch.fork sw (fun () -> first := Some (f ())));
          g ())
    in
    match !first with
    | Some a -> (a, second)
    | None -> assert false (* [run] returned: [f] returned. *)

  let any fs =
    if fs = [] then invalid_arg "Braid.Fiber.any: no function";
    let winner = Atomic.make None in
    let finish sw v =
      if Atomic.compare_and_set winner None (Some v) then Switch.stop sw
    in
    match
      Switch.run_stoppable (fun sw ->
          List.iter
            (fun f -> ignore (Switch.fork sw (fun () -> finish sw (f ()))))
            fs)
    with
    | Some () | None -> (
        match Atomic.get winner with
        | Some v -> v
        | None -> assert false (* Only a winner stops the switch. *))

  let first f g = any [ f; g ]
end

module Switch = Switch

module Private = struct
  module Fiber = Fiber.Private
  module Scheduler = Scheduler
  module Task_queue = Task_queue
  module Wake_up = Wake_up
  module Spin = Spin
end
