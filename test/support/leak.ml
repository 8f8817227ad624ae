let warm_up = 10_000
let allowed_growth_words = 20_000

let live_words () =
  Gc.full_major ();
  (Gc.stat ()).live_words

let block_then_cancel block =
  let h = Braid.Fiber.fork block in
  Braid.Fiber.yield ();
  Braid.Fiber.cancel h;
  match Braid.Fiber.join h with
  | () -> Alcotest.fail "the blocked operation completed"
  | exception Braid.Cancelled -> ()

let stays_flat ?(cycles = 1_000_000) name cycle =
  for _ = 1 to warm_up do
    cycle ()
  done;
  let before = live_words () in
  for _ = 1 to cycles do
    cycle ()
  done;
  let after = live_words () in
  if after - before > allowed_growth_words then
    Alcotest.failf "%s: live words grew from %d to %d over %d cycles" name
      before after cycles
