module Value = Value
module Error = Error
module Statement = Statement
module Session_store = Session_store

type row = Value.t array

module type DRIVER = sig
  type config
  type connection

  val connect : sw:Braid.Switch.t -> config -> (connection, Error.t) result
  val close : connection -> unit
  val is_usable : connection -> bool

  val query :
    connection -> ?params:Value.t array -> string -> (row list, Error.t) result

  val exec :
    connection -> ?params:Value.t array -> string -> (int, Error.t) result

  val query_prepared :
    connection -> Statement.t -> Value.t array -> (row list, Error.t) result

  val exec_prepared :
    connection -> Statement.t -> Value.t array -> (int, Error.t) result
end

module type S = sig
  include DRIVER

  val with_transaction :
    connection -> (connection -> ('a, Error.t) result) -> ('a, Error.t) result

  type pool
  type stats = { open_connections : int; idle : int; waiting : int }

  val pool :
    ?sw:Braid.Switch.t ->
    ?max_size:int ->
    ?wait_timeout:float ->
    ?max_idle:float ->
    config ->
    pool

  val use : pool -> (connection -> ('a, Error.t) result) -> ('a, Error.t) result
  val stats : pool -> stats
end

module Make (D : DRIVER) = struct
  include D

  (* The outcome being reported is [f]'s error or exception: a rollback that
     fails as well adds nothing the caller can act on, and it fails only on a
     broken connection, which the driver has marked unusable (so a pool
     closes it, and the server aborts the transaction with it). *)
  let rollback c = ignore (Braid.Fiber.protect (fun () -> D.exec c "ROLLBACK"))

  let with_transaction c f =
    match D.exec c "BEGIN" with
    | Error _ as e -> e
    | Ok _ -> (
        match f c with
        | Ok v -> (
            match D.exec c "COMMIT" with
            | Ok _ -> Ok v
            | Error _ as e ->
                rollback c;
                e)
        | Error _ as e ->
            rollback c;
            e
        | exception e ->
            let bt = Printexc.get_raw_backtrace () in
            rollback c;
            Printexc.raise_with_backtrace e bt)

  type pool = D.connection Pool.t

  type stats = Pool.stats = {
    open_connections : int;
    idle : int;
    waiting : int;
  }

  let pool ?sw ?(max_size = 10) ?(wait_timeout = 5.) ?(max_idle = 300.) config =
    Pool.create ?sw ~max_size ~wait_timeout ~max_idle
      ~connect:(fun ~sw -> D.connect ~sw config)
      ~close:D.close ~is_usable:D.is_usable ()

  let use = Pool.use
  let stats = Pool.stats
end
