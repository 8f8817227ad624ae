(* Linearizability of Mvar and Channel, two domains at once (qcheck-lin).
   Only operations that never block can run here: a blocked operation would
   hang the test. Blocking paths are model-checked (dscheck) and exercised
   across schedulers (test_matrix). *)

open Braid_sync

module Mvar_spec = struct
  type t = int Mvar.t

  let init () = Mvar.create_empty ()
  let cleanup _ = ()

  open Lin

  let api =
    [
      val_ "Mvar.try_put" Mvar.try_put (t @-> nat_small @-> returning bool);
      val_ "Mvar.try_take" Mvar.try_take (t @-> returning (option nat_small));
      val_ "Mvar.is_empty" Mvar.is_empty (t @-> returning bool);
    ]
end

module Channel_spec = struct
  type t = int Channel.t

  let init () = Channel.create 3
  let cleanup _ = ()

  open Lin

  let api =
    [
      val_freq 4 "Channel.try_send" Channel.try_send
        (t @-> nat_small @-> returning_or_exc bool);
      val_freq 4 "Channel.try_recv" Channel.try_recv
        (t @-> returning_or_exc (option nat_small));
      val_freq 4 "Channel.length" Channel.length (t @-> returning int);
      val_freq 1 "Channel.close" Channel.close (t @-> returning unit);
      val_freq 4 "Channel.is_closed" Channel.is_closed (t @-> returning bool);
    ]
end

module Mvar_lin = Lin_domain.Make (Mvar_spec)
module Channel_lin = Lin_domain.Make (Channel_spec)

let () =
  QCheck_base_runner.run_tests_main
    [
      Mvar_lin.lin_test ~count:500 ~name:"Mvar is linearizable across 2 domains";
      Channel_lin.lin_test ~count:500
        ~name:"Channel is linearizable across 2 domains";
    ]
