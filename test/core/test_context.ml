(* Fiber-local context: bindings and inherited effect handlers follow every
   fork, on every scheduler (FIFO, IO loop, pool, Lwt bridge) and from bare
   threads, and never flow back up. *)

open Braid
module Promise = Braid_sync.Promise

let check_opt = Alcotest.(check (option string))
let user : string Fiber.key = Fiber.create_key ~name:"user" ()

(* An effect answered by a handler installed with [Fiber.with_handler]: the
   answer says which handler answered and from which domain, so a test sees
   that a copy of the handler ran where the effect was performed. *)
type _ Effect.t += Whoami : (string * int) Effect.t

let answering name =
  {
    Fiber.run =
      (fun f ->
        Effect.Deep.try_with f ()
          {
            effc =
              (fun (type a) (e : a Effect.t) ->
                match e with
                | Whoami ->
                    Some
                      (fun (k : (a, _) Effect.Deep.continuation) ->
                        Effect.Deep.continue k (name, (Domain.self () :> int)))
                | _ -> None);
          });
  }

let whoami () =
  match Effect.perform Whoami with
  | name, _ -> Some name
  | exception Effect.Unhandled Whoami -> None

(* {1 Bindings} *)

let binding_scoped () =
  Braid_fifo.run (fun () ->
      check_opt "unbound" None (Fiber.get user);
      Fiber.with_binding user "ada" (fun () ->
          check_opt "bound" (Some "ada") (Fiber.get user);
          Fiber.with_binding user "bob" (fun () ->
              check_opt "shadowed" (Some "bob") (Fiber.get user));
          check_opt "restored" (Some "ada") (Fiber.get user);
          (try Fiber.with_binding user "eve" (fun () -> failwith "x")
           with Failure _ -> ());
          check_opt "restored after raise" (Some "ada") (Fiber.get user);
          Fiber.without_binding user (fun () ->
              check_opt "without" None (Fiber.get user)));
      check_opt "unbound again" None (Fiber.get user))

(* The engine's binding on a fiber record it already holds: the same as
   [with_binding] for the caller, its forks, and undone after, even on a raise. *)
let binding_in_known_fiber () =
  Braid_fifo.run (fun () ->
      let me = Option.get (Private.Fiber.current ()) in
      Private.Fiber.with_binding_in me user "ada" (fun () ->
          check_opt "bound" (Some "ada") (Fiber.get user);
          check_opt "a fork inherits it" (Some "ada")
            (Fiber.join (Fiber.fork (fun () -> Fiber.get user)));
          (try
             Private.Fiber.with_binding_in me user "eve" (fun () ->
                 failwith "x")
           with Failure _ -> ());
          check_opt "restored after raise" (Some "ada") (Fiber.get user));
      check_opt "unbound after" None (Fiber.get user))

let keys_distinct () =
  let other : string Fiber.key = Fiber.create_key () in
  Braid_fifo.run (fun () ->
      Fiber.with_binding user "ada" (fun () ->
          check_opt "other key" None (Fiber.get other)))

(* A child sees its parent's context as it was at the fork; changes made
   afterwards on either side stay on that side. *)
let fork_inherits_snapshot () =
  Braid_fifo.run (fun () ->
      let go = Promise.create () in
      Fiber.with_binding user "parent" (fun () ->
          let child =
            Fiber.fork (fun () ->
                let at_start = Fiber.get user in
                Promise.await go;
                let later = Fiber.get user in
                let own =
                  Fiber.with_binding user "child" (fun () -> Fiber.get user)
                in
                (at_start, later, own))
          in
          Fiber.with_binding user "parent later" (fun () ->
              Promise.fill go ();
              let at_start, later, own = Fiber.join child in
              check_opt "at start" (Some "parent") at_start;
              check_opt "after the parent rebound" (Some "parent") later;
              check_opt "own binding" (Some "child") own;
              check_opt "parent unaffected" (Some "parent later")
                (Fiber.get user))))

let grandchildren () =
  Braid_fifo.run (fun () ->
      Fiber.with_binding user "root" (fun () ->
          Switch.run (fun sw ->
              let h =
                Fiber.fork ~sw (fun () ->
                    Fiber.join (Fiber.fork (fun () -> Fiber.get user)))
              in
              check_opt "grandchild" (Some "root") (Fiber.join h))))

(* {1 Every scheduler} *)

let io_loop () =
  Braid_io.run (fun () ->
      Fiber.with_binding user "io" (fun () ->
          let h = Fiber.fork (fun () -> Fiber.get user) in
          check_opt "IO loop fork" (Some "io") (Fiber.join h)))

let pool_task_from_fiber () =
  Braid_pool.with_pool ~domains:2 (fun pool ->
      Braid_fifo.run (fun () ->
          Fiber.with_binding user "submitter" (fun () ->
              let seen =
                Promise.await
                  (Braid_pool.async pool (fun () ->
                       (* And a fiber forked inside the task. *)
                       let h = Fiber.fork (fun () -> Fiber.get user) in
                       (Fiber.get user, Fiber.join h)))
              in
              check_opt "task" (Some "submitter") (fst seen);
              check_opt "fiber in the task" (Some "submitter") (snd seen))))

let bare_thread () =
  Braid_pool.with_pool ~domains:1 (fun pool ->
      let result = ref None in
      let t =
        Thread.create
          (fun () ->
            Fiber.with_binding user "thread" (fun () ->
                result :=
                  Some
                    ( Fiber.get user,
                      Braid_pool.run pool (fun () -> Fiber.get user),
                      Braid_fifo.run (fun () -> Fiber.get user) )))
          ()
      in
      Thread.join t;
      match !result with
      | None -> Alcotest.fail "the thread did not finish"
      | Some (own, task, main) ->
          check_opt "the thread" (Some "thread") own;
          check_opt "a pool task it submits" (Some "thread") task;
          check_opt "a scheduler it runs" (Some "thread") main;
          check_opt "another thread" None (Fiber.get user))

let lwt_bridge () =
  let bridge = Braid_lwt.create () in
  let seen =
    Fiber.with_binding user "lwt side" (fun () ->
        Lwt_main.run
          (Braid_lwt.run bridge (fun () ->
               let h = Fiber.fork (fun () -> Fiber.get user) in
               (Fiber.get user, Fiber.join h))))
  in
  check_opt "bridge operation" (Some "lwt side") (fst seen);
  check_opt "fiber forked in it" (Some "lwt side") (snd seen)

let with_context_elsewhere () =
  Braid_fifo.run (fun () ->
      Fiber.with_binding user "carried" (fun () ->
          Fiber.with_handler (answering "carried handler") (fun () ->
              let ctx = Fiber.context () in
              let got = ref (None, None) in
              let t =
                Thread.create
                  (fun () ->
                    got :=
                      Fiber.with_context ctx (fun () ->
                          (Fiber.get user, whoami ())))
                  ()
              in
              Thread.join t;
              check_opt "binding" (Some "carried") (fst !got);
              check_opt "handler" (Some "carried handler") (snd !got))))

(* {1 Inherited handlers} *)

let handler_follows_forks () =
  Braid_fifo.run (fun () ->
      check_opt "no handler" None (whoami ());
      Fiber.with_handler (answering "outer") (fun () ->
          check_opt "in place" (Some "outer") (whoami ());
          let detached = Fiber.fork whoami in
          let in_switch =
            Switch.run (fun sw ->
                Fiber.join (Fiber.fork ~sw (fun () -> Fiber.fork whoami)))
          in
          check_opt "detached fork" (Some "outer") (Fiber.join detached);
          check_opt "switch fork's child" (Some "outer") (Fiber.join in_switch));
      check_opt "removed after" None (whoami ());
      let after = Fiber.fork whoami in
      check_opt "forks after" None (Fiber.join after))

let inner_handler_answers () =
  Braid_fifo.run (fun () ->
      Fiber.with_handler (answering "outer") (fun () ->
          Fiber.with_handler (answering "inner") (fun () ->
              check_opt "in place" (Some "inner") (whoami ());
              check_opt "in a fork" (Some "inner")
                (Fiber.join (Fiber.fork whoami)))))

(* A fiber's unhandled effects still reach its scheduler through the
   re-installed handlers: blocking in a child works. *)
let child_blocks_through_handlers () =
  Braid_io.run (fun () ->
      Fiber.with_handler (answering "h") (fun () ->
          let p = Promise.create () in
          let h =
            Fiber.fork (fun () ->
                Braid_io.Time.sleep 0.001;
                Promise.await p ^ Option.get (whoami ()))
          in
          Fiber.yield ();
          Promise.fill p "woken by ";
          Alcotest.(check string) "child" "woken by h" (Fiber.join h)))

let handler_in_pool_task () =
  Braid_pool.with_pool ~domains:2 (fun pool ->
      let here = (Domain.self () :> int) in
      Braid_fifo.run (fun () ->
          Fiber.with_handler (answering "connection") (fun () ->
              let answers =
                List.init 8 (fun _ ->
                    Braid_pool.async pool (fun () -> Effect.perform Whoami))
                |> List.map Promise.await
              in
              List.iter
                (fun (name, domain) ->
                  Alcotest.(check string) "answered by" "connection" name;
                  Alcotest.(check bool)
                    "on a worker domain" true (domain <> here))
                answers)))

let () =
  Alcotest.run "context"
    [
      ( "bindings",
        [
          Alcotest.test_case "scoped" `Quick binding_scoped;
          Alcotest.test_case "on a known fiber" `Quick binding_in_known_fiber;
          Alcotest.test_case "distinct keys" `Quick keys_distinct;
          Alcotest.test_case "fork: a snapshot" `Quick fork_inherits_snapshot;
          Alcotest.test_case "grandchildren" `Quick grandchildren;
        ] );
      ( "schedulers",
        [
          Alcotest.test_case "IO loop" `Quick io_loop;
          Alcotest.test_case "pool task from a fiber" `Quick
            pool_task_from_fiber;
          Alcotest.test_case "bare thread" `Quick bare_thread;
          Alcotest.test_case "Lwt bridge" `Quick lwt_bridge;
          Alcotest.test_case "with_context in a thread" `Quick
            with_context_elsewhere;
        ] );
      ( "handlers",
        [
          Alcotest.test_case "follow forks" `Quick handler_follows_forks;
          Alcotest.test_case "innermost answers" `Quick inner_handler_answers;
          Alcotest.test_case "children still block" `Quick
            child_blocks_through_handlers;
          Alcotest.test_case "pool tasks on other domains" `Quick
            handler_in_pool_task;
        ] );
    ]
