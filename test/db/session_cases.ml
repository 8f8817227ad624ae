(* Braid_db.Session_store on a driver: the same cases for PostgreSQL and
   SQLite. Two session middlewares on one table stand for two instances of an
   application behind a load balancer. *)

open Braid_web
open Braid_server

module Make
    (D : Braid_db.S)
    (P : sig
      val with_pool : (D.pool -> unit) -> unit
    end) =
struct
  module Sessions = Braid_db.Session_store.Make (D)

  let ok = function
    | Ok v -> v
    | Error e -> Alcotest.failf "database: %s" (Braid_db.Error.to_string e)

  let instance pool =
    Router.(
      empty
      |> use (Session.middleware ~idle_timeout:600. (Sessions.store pool))
      |> get "/me" (fun r ->
             Response.string
               (Option.value (Session.get r "user") ~default:"anonymous"))
      |> post "/login" (fun r ->
             Session.rotate r;
             Session.set r "user" "ada";
             Response.string "in")
      |> post "/logout" (fun r ->
             Session.invalidate r;
             Response.string "out"))

  let rows pool =
    match
      ok (D.use pool (fun c -> D.query c "SELECT count(*) FROM braid_sessions"))
    with
    | [ [| Braid_db.Value.Int n |] ] -> n
    | _ -> Alcotest.fail "count"

  let shared_by_two_instances () =
    P.with_pool @@ fun pool ->
    ok (D.use pool (fun c -> Sessions.create_table c));
    let memory = In_memory.create () in
    let a = instance pool and b = instance pool in
    let client_a = Testing.Client.create ~memory a in
    Alcotest.(check string)
      "logged in on A" "in" (Testing.Client.post client_a "/login").body;
    let cookie = Option.get (Testing.Client.cookie client_a "__Host-session") in
    let on_b = Testing.Client.create ~memory b in
    Testing.Client.set_cookie on_b "__Host-session" cookie;
    Alcotest.(check string)
      "B sees A's session" "ada" (Testing.Client.get on_b "/me").body;
    Alcotest.(check int) "one row" 1 (rows pool);
    ignore (Testing.Client.post on_b "/logout");
    Alcotest.(check string)
      "logged out on B: gone on A" "anonymous"
      (Testing.Client.get client_a "/me").body;
    Alcotest.(check int) "no row" 0 (rows pool);
    (* Expired rows go when a later session is saved, a minute on. *)
    ignore (Testing.Client.post client_a "/login");
    In_memory.advance memory 3600.;
    Alcotest.(check string)
      "expired" "anonymous" (Testing.Client.get client_a "/me").body;
    let other = Testing.Client.create ~memory a in
    ignore (Testing.Client.post other "/login");
    Alcotest.(check int) "the expired row swept" 1 (rows pool)

  let bad_table () =
    Alcotest.check_raises "not an identifier"
      (Invalid_argument
         {|Session_store: "sessions; DROP TABLE x" is not an SQL identifier|})
      (fun () ->
        P.with_pool @@ fun pool ->
        ignore (Sessions.store ~table:"sessions; DROP TABLE x" pool))

  let cases =
    [
      Alcotest.test_case "shared by two instances" `Quick
        shared_by_two_instances;
      Alcotest.test_case "table name checked" `Quick bad_table;
    ]
end
