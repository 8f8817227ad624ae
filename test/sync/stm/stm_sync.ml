(* Sequential and parallel (two domains) state-machine tests of Semaphore,
   Channel, Mvar, Promise and Lazy against pure models, after Saturn's
   test/<structure>/stm_*.ml.

   Each domain runs its command sequence as the main fiber of a FIFO
   scheduler, so blocking operations are real: [attempt] runs one in a fiber
   and, if it is still blocked once the scheduler has nothing else to do,
   cancels it. A cancelled operation must have had no effect (the model's
   [None]); one that completed, possibly woken from the other domain, must
   agree with the model. Blocking paths with cancellation are thus checked
   for linearizability, not only the try_ variants. *)

open Braid_sync

(* [Some v] if [f] completed, [None] if it was still blocked and got
   cancelled. *)
let attempt f =
  let h = Braid.Fiber.fork f in
  Braid.Fiber.yield ();
  if not (Braid.Fiber.is_done h) then Braid.Fiber.cancel h;
  match Braid.Fiber.join h with
  | v -> Some v
  | exception Braid.Cancelled -> None

let value = QCheck.Gen.int_bound 9

module Defaults = struct
  include STM.SpecDefaults

  let wrap_cmd_seq thunk = Braid_fifo.run thunk
end

module Semaphore_spec = struct
  include Defaults

  type cmd = Try_acquire | Acquire | Release | Get_value
  type state = int
  type sut = Semaphore.t

  let show_cmd = function
    | Try_acquire -> "try_acquire"
    | Acquire -> "acquire"
    | Release -> "release"
    | Get_value -> "get_value"

  let arb_cmd _ =
    QCheck.make ~print:show_cmd
      QCheck.Gen.(oneofl [ Try_acquire; Acquire; Release; Get_value ])

  let init_state = 1
  let init_sut () = Semaphore.make 1

  let next_state cmd n =
    match cmd with
    | Try_acquire | Acquire -> max 0 (n - 1)
    | Release -> n + 1
    | Get_value -> n

  let run cmd s =
    let open STM in
    match cmd with
    | Try_acquire -> Res (bool, Semaphore.try_acquire s)
    | Acquire -> Res (option unit, attempt (fun () -> Semaphore.acquire s))
    | Release -> Res (unit, Semaphore.release s)
    | Get_value -> Res (int, Semaphore.get_value s)

  let postcond cmd (n : state) (res : STM.res) =
    let open STM in
    match (cmd, res) with
    | Try_acquire, Res ((Bool, _), got) -> got = (n > 0)
    | Acquire, Res ((Option Unit, _), got) ->
        got = if n > 0 then Some () else None
    | Release, Res ((Unit, _), ()) -> true
    | Get_value, Res ((Int, _), v) -> v = n
    | _ -> false
end

(* A channel with [capacity] slots; the model is its buffer and whether it
   is closed. A sender blocked when the channel closes still delivers its
   value (as documented), which no bounded-buffer model can order: [close]
   is left out of the parallel tests (dscheck covers it) and a zero-slot
   channel is tested sequentially only, since a send and a receive meeting
   on two domains have no sequential order that a model without a slot
   allows. *)
module Channel_spec (C : sig
  val capacity : int
  val with_close : bool
end) =
struct
  include Defaults

  type cmd =
    | Try_send of int
    | Send of int
    | Try_recv
    | Recv
    | Close
    | Length
    | Is_closed

  type state = { items : int list; closed : bool }
  type sut = int Channel.t

  let show_cmd = function
    | Try_send v -> Printf.sprintf "try_send %d" v
    | Send v -> Printf.sprintf "send %d" v
    | Try_recv -> "try_recv"
    | Recv -> "recv"
    | Close -> "close"
    | Length -> "length"
    | Is_closed -> "is_closed"

  let arb_cmd _ =
    let open QCheck.Gen in
    QCheck.make ~print:show_cmd
      (frequency
         [
           (4, map (fun v -> Try_send v) value);
           (4, map (fun v -> Send v) value);
           (4, return Try_recv);
           (4, return Recv);
           ((if C.with_close then 1 else 0), return Close);
           (2, return Length);
           (1, return Is_closed);
         ])

  let init_state = { items = []; closed = false }
  let init_sut () = Channel.create C.capacity
  let has_room s = List.length s.items < C.capacity

  let next_state cmd s =
    match cmd with
    | (Try_send v | Send v) when (not s.closed) && has_room s ->
        { s with items = s.items @ [ v ] }
    | Try_recv | Recv -> (
        match s.items with [] -> s | _ :: items -> { s with items })
    | Close -> { s with closed = true }
    | Try_send _ | Send _ | Length | Is_closed -> s

  let run cmd ch =
    let open STM in
    match cmd with
    | Try_send v -> Res (result bool exn, protect (Channel.try_send ch) v)
    | Send v ->
        Res
          ( result (option unit) exn,
            protect (fun () -> attempt (fun () -> Channel.send ch v)) () )
    | Try_recv -> Res (result (option int) exn, protect Channel.try_recv ch)
    | Recv ->
        Res
          ( result (option int) exn,
            protect (fun () -> attempt (fun () -> Channel.recv ch)) () )
    | Close -> Res (unit, Channel.close ch)
    | Length -> Res (int, Channel.length ch)
    | Is_closed -> Res (bool, Channel.is_closed ch)

  let received s = function
    | Ok got -> (
        match s.items with
        | [] -> got = None && not s.closed
        | v :: _ -> got = Some v)
    | Error Channel.Closed -> s.closed && s.items = []
    | Error _ -> false

  let postcond cmd (s : state) (res : STM.res) =
    let open STM in
    match (cmd, res) with
    | Try_send _, Res ((Result (Bool, Exn), _), r) ->
        r = if s.closed then Error Channel.Closed else Ok (has_room s)
    | Send _, Res ((Result (Option Unit, Exn), _), r) ->
        r
        =
        if s.closed then Error Channel.Closed
        else Ok (if has_room s then Some () else None)
    | (Try_recv | Recv), Res ((Result (Option Int, Exn), _), r) -> received s r
    | Close, Res ((Unit, _), ()) -> true
    | Length, Res ((Int, _), n) -> n = List.length s.items
    | Is_closed, Res ((Bool, _), b) -> b = s.closed
    | _ -> false
end

module Mvar_spec = struct
  include Defaults

  type cmd = Try_put of int | Put of int | Try_take | Take | Is_empty
  type state = int option
  type sut = int Mvar.t

  let show_cmd = function
    | Try_put v -> Printf.sprintf "try_put %d" v
    | Put v -> Printf.sprintf "put %d" v
    | Try_take -> "try_take"
    | Take -> "take"
    | Is_empty -> "is_empty"

  let arb_cmd _ =
    let open QCheck.Gen in
    QCheck.make ~print:show_cmd
      (frequency
         [
           (3, map (fun v -> Try_put v) value);
           (3, map (fun v -> Put v) value);
           (3, return Try_take);
           (3, return Take);
           (1, return Is_empty);
         ])

  let init_state = None
  let init_sut () = Mvar.create_empty ()

  let next_state cmd s =
    match (cmd, s) with
    | (Try_put v | Put v), None -> Some v
    | (Try_take | Take), Some _ -> None
    | _ -> s

  let run cmd m =
    let open STM in
    match cmd with
    | Try_put v -> Res (bool, Mvar.try_put m v)
    | Put v -> Res (option unit, attempt (fun () -> Mvar.put m v))
    | Try_take -> Res (option int, Mvar.try_take m)
    | Take -> Res (option int, attempt (fun () -> Mvar.take m))
    | Is_empty -> Res (bool, Mvar.is_empty m)

  let postcond cmd (s : state) (res : STM.res) =
    let open STM in
    match (cmd, res) with
    | Try_put _, Res ((Bool, _), b) -> b = Option.is_none s
    | Put _, Res ((Option Unit, _), r) ->
        r = if Option.is_none s then Some () else None
    | (Try_take | Take), Res ((Option Int, _), (r : int option)) -> r = s
    | Is_empty, Res ((Bool, _), b) -> b = Option.is_none s
    | _ -> false
end

module Promise_spec = struct
  include Defaults

  type cmd = Try_fill of int | Fill of int | Peek | Await
  type state = int option
  type sut = int Promise.t

  let show_cmd = function
    | Try_fill v -> Printf.sprintf "try_fill %d" v
    | Fill v -> Printf.sprintf "fill %d" v
    | Peek -> "peek"
    | Await -> "await"

  let arb_cmd _ =
    let open QCheck.Gen in
    QCheck.make ~print:show_cmd
      (frequency
         [
           (1, map (fun v -> Try_fill v) value);
           (1, map (fun v -> Fill v) value);
           (2, return Peek);
           (3, return Await);
         ])

  let init_state = None
  let init_sut () = Promise.create ()

  let next_state cmd s =
    match (cmd, s) with (Try_fill v | Fill v), None -> Some v | _ -> s

  let run cmd p =
    let open STM in
    match cmd with
    | Try_fill v -> Res (bool, Promise.try_fill p (Ok v))
    | Fill v -> Res (result unit exn, protect (Promise.fill p) v)
    | Peek ->
        Res
          ( option int,
            match Promise.peek p with
            | Some (Ok v) -> Some v
            | Some (Error _) -> Some (-1)
            | None -> None )
    | Await -> Res (option int, attempt (fun () -> Promise.await p))

  let postcond cmd (s : state) (res : STM.res) =
    let open STM in
    match (cmd, res) with
    | Try_fill _, Res ((Bool, _), b) -> b = Option.is_none s
    | Fill _, Res ((Result (Unit, Exn), _), r) ->
        r = if Option.is_none s then Ok () else Error Promise.Already_filled
    | (Peek | Await), Res ((Option Int, _), (r : int option)) -> r = s
    | _ -> false
end

(* Forcing blocks while another domain computes: the computation never
   blocks, so [force] is run to completion rather than attempted. The
   computation counts its runs: every force must see exactly one. *)
module Lazy_spec = struct
  include Defaults

  type cmd = Force | Is_val
  type state = bool
  type sut = int Lazy.t

  let show_cmd = function Force -> "force" | Is_val -> "is_val"

  let arb_cmd _ =
    QCheck.make ~print:show_cmd QCheck.Gen.(oneofl [ Force; Is_val ])

  let init_state = false

  let init_sut () =
    let runs = Atomic.make 0 in
    Lazy.from_fun (fun () -> Atomic.fetch_and_add runs 1 + 1)

  let next_state cmd forced = match cmd with Force -> true | Is_val -> forced

  let run cmd l =
    let open STM in
    match cmd with
    | Force -> Res (int, Lazy.force l)
    | Is_val -> Res (bool, Lazy.is_val l)

  let postcond cmd (forced : state) (res : STM.res) =
    let open STM in
    match (cmd, res) with
    | Force, Res ((Int, _), runs) -> runs = 1
    | Is_val, Res ((Bool, _), b) -> b = forced
    | _ -> false
end

let sequential (module Spec : STM.SpecExt) name =
  let module Seq = STM_sequential.MakeExt (Spec) in
  Seq.agree_test ~count:300 ~name:(name ^ " sequential")

let parallel (module Spec : STM.SpecExt) name =
  let module Dom = STM_domain.MakeExt (Spec) in
  Dom.agree_test_par ~count:100 ~name:(name ^ " on 2 domains")

let channel capacity with_close =
  (module Channel_spec (struct
    let capacity = capacity
    let with_close = with_close
  end) : STM.SpecExt)

let () =
  QCheck_base_runner.run_tests_main
    (List.concat_map
       (fun (name, spec) -> [ sequential spec name; parallel spec name ])
       [
         ("Semaphore", (module Semaphore_spec : STM.SpecExt));
         ("Mvar", (module Mvar_spec));
         ("Promise", (module Promise_spec));
         ("Lazy", (module Lazy_spec));
       ]
    @ List.map
        (fun n -> sequential (channel n true) (Printf.sprintf "Channel(%d)" n))
        [ 0; 1; 3 ]
    @ List.map
        (fun n -> parallel (channel n false) (Printf.sprintf "Channel(%d)" n))
        [ 1; 3 ])
