open Braid

let now = Mtime_clock.now
let now_ns = Loop.now_ns

let deadline_after ~op seconds =
  if Float.is_nan seconds then invalid_arg (op ^ ": NaN duration");
  (* Far-away deadlines are clamped (to about 30 years) instead of wrapping
     around. *)
  let ns = Float.min (seconds *. 1e9) 1e18 in
  Loop.now_ns () + int_of_float ns

let sleep seconds =
  let op = "Braid_io.Time.sleep" in
  let loop = Loop.current ~op in
  let deadline = deadline_after ~op seconds in
  if seconds <= 0. then Fiber.yield () else Loop.sleep_until loop ~deadline

let sleep_until t =
  let loop = Loop.current ~op:"Braid_io.Time.sleep_until" in
  Loop.sleep_until loop ~deadline:(Int64.to_int (Mtime.to_uint64_ns t))

type 'a outcome = Returned of 'a | Expired

let timeout seconds f =
  let op = "Braid_io.Time.timeout" in
  let loop = Loop.current ~op in
  let deadline = deadline_after ~op seconds in
  let outcome =
    Fiber.Scope.run (fun scope ->
        let timer =
          Loop.add_timer loop ~deadline (fun _ ->
              Fiber.Scope.cancel scope;
              true)
        in
        match f () with
        | v ->
            Loop.remove_timer loop timer;
            Returned v
        | exception Cancelled when Fiber.Scope.is_cancelled scope ->
            Loop.remove_timer loop timer;
            Expired
        | exception e ->
            let bt = Printexc.get_raw_backtrace () in
            Loop.remove_timer loop timer;
            Printexc.raise_with_backtrace e bt)
  in
  match outcome with
  | Returned v -> Some v
  | Expired ->
      (* Our timer fired, but an enclosing scope may have been cancelled
         too: then the cancellation is theirs to report. *)
      if Fiber.is_cancelled () then raise Cancelled else None
