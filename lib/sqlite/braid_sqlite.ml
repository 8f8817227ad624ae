module Value = Braid_db.Value
module Error = Braid_db.Error
module Statement = Braid_db.Statement
module Blocking = Braid_io.Blocking

(* The driver; [Braid_db.Make] adds transactions and the pool. *)
module Driver = struct
  type config = { path : string; blocking : Blocking.t; busy_timeout_ms : int }

  let config ?(threads = 4) ?(busy_timeout = 5.) path =
    if threads < 1 then invalid_arg "Braid_sqlite.config: threads < 1";
    {
      path;
      blocking = Blocking.create ~max_threads:threads ();
      busy_timeout_ms = int_of_float (Float.max 0. busy_timeout *. 1000.);
    }

  (* Who may touch the database handle. A fiber's call moves it from [Idle]
     to [Running] and its thread back to [Idle]. A cancelled fiber leaves the
     call [Abandoned]: its thread then closes the handle when the call ends,
     as nobody else may touch it while it runs. [Closed] is final. *)
  type state = Idle | Running | Abandoned | Closed

  type connection = {
    db : Sqlite3.db;
    blocking : Blocking.t;
    statements : (string, Sqlite3.stmt) Hashtbl.t;
        (** Prepared statements by {!Statement.name}; touched only by the thread
            running a call. *)
    state : state Atomic.t;
    mutable usable : bool;
  }

  (* On the thread that owns the handle (the one running the last call, or
     any once no call runs). [db_close] refuses only while statements are
     unfinalised, and these are all of them. *)
  let close_handle c =
    Hashtbl.iter (fun _ stmt -> ignore (Sqlite3.finalize stmt)) c.statements;
    Hashtbl.reset c.statements;
    ignore (Sqlite3.db_close c.db)

  let sql_error db rc =
    Error.Sql { code = Sqlite3.Rc.to_string rc; message = Sqlite3.errmsg db }

  let abandoned = Error.Connection_lost "a cancelled call left the connection"

  (* Runs [f c] on the config's pool, the calling fiber waiting. *)
  let call c f =
    if not (c.usable && Atomic.compare_and_set c.state Idle Running) then
      Error abandoned
    else
      let work () =
        let outcome =
          match f c with
          | r -> Ok r
          | exception e -> Error (e, Printexc.get_raw_backtrace ())
        in
        if not (Atomic.compare_and_set c.state Running Idle) then
          (* Abandoned: its fiber is gone, the handle is ours to close. *)
          close_handle c;
        outcome
      in
      match Blocking.run ~pool:c.blocking work with
      | Ok r -> r
      | Error (e, bt) ->
          (* Not a way SQLite reports failure (those are result codes): a bug
             or misuse, raised in the caller's fiber. *)
          Printexc.raise_with_backtrace e bt
      | exception (Braid.Cancelled as e) ->
          let bt = Printexc.get_raw_backtrace () in
          c.usable <- false;
          if not (Atomic.compare_and_set c.state Running Abandoned) then
            (* The call had finished: the handle is idle, [close] frees it. *)
            ();
          Printexc.raise_with_backtrace e bt

  let connect ~sw:_ (config : config) =
    Blocking.run ~pool:config.blocking
      ~dispose:(function
        | Ok db -> ignore (Sqlite3.db_close db) | Error _ -> ())
      (fun () ->
        match Sqlite3.db_open config.path with
        | db ->
            Sqlite3.busy_timeout db config.busy_timeout_ms;
            Ok db
        | exception (Sqlite3.Error m | Sqlite3.SqliteError m) ->
            Error (Error.Connect_failed m))
    |> Result.map (fun db ->
           {
             db;
             blocking = config.blocking;
             statements = Hashtbl.create 8;
             state = Atomic.make Idle;
             usable = true;
           })

  let rec close c =
    c.usable <- false;
    match Atomic.get c.state with
    | Closed | Abandoned -> ()
    | Running ->
        if not (Atomic.compare_and_set c.state Running Abandoned) then close c
    | Idle ->
        if Atomic.compare_and_set c.state Idle Closed then
          Braid.Fiber.protect (fun () ->
              match
                Blocking.run ~pool:c.blocking (fun () -> close_handle c)
              with
              | () -> ()
              | exception Invalid_argument _ ->
                  (* The pool was shut down: close here, it is quick. *)
                  close_handle c)
        else close c

  let is_usable c = c.usable

  (* {1 On the pool's thread} *)

  let to_data = function
    | Value.Null -> Sqlite3.Data.NULL
    | Bool b -> INT (if b then 1L else 0L)
    | Int i -> INT (Int64.of_int i)
    | Float f -> FLOAT f
    | Text s -> TEXT s
    | Blob s -> BLOB s

  let of_data = function
    | Sqlite3.Data.NONE | NULL -> Value.Null
    | INT i -> Int (Int64.to_int i)
    | FLOAT f -> Float f
    | TEXT s -> Text s
    | BLOB s -> Blob s

  let prepare db sql =
    match Sqlite3.prepare db sql with
    | stmt -> Ok stmt
    | exception Sqlite3.Error message ->
        Error
          (Error.Sql
             { code = Sqlite3.Rc.to_string (Sqlite3.errcode db); message })

  let bind db stmt params =
    let rec from i =
      if i = Array.length params then Ok ()
      else
        let rc = Sqlite3.bind stmt (i + 1) (to_data params.(i)) in
        if Sqlite3.Rc.is_success rc then from (i + 1)
        else Error (sql_error db rc)
    in
    from 0

  let rec rows db stmt acc =
    match Sqlite3.step stmt with
    | Sqlite3.Rc.ROW ->
        rows db stmt (Array.map of_data (Sqlite3.row_data stmt) :: acc)
    | DONE -> Ok (List.rev acc)
    | rc -> Error (sql_error db rc)

  let rec changes db stmt =
    match Sqlite3.step stmt with
    | Sqlite3.Rc.ROW -> changes db stmt
    | DONE -> Ok (Sqlite3.changes db)
    | rc -> Error (sql_error db rc)

  let once c sql params run =
    match prepare c.db sql with
    | Error _ as e -> e
    | Ok stmt ->
        let r = Result.bind (bind c.db stmt params) (fun () -> run c.db stmt) in
        (* Finalising reports the last step's error again, already in [r]. *)
        ignore (Sqlite3.finalize stmt);
        r

  let cached c stmt params run =
    let name = Statement.name stmt in
    let prepared =
      match Hashtbl.find_opt c.statements name with
      | Some s ->
          (* [reset] repeats the previous run's error, reported then. *)
          ignore (Sqlite3.reset s);
          ignore (Sqlite3.clear_bindings s);
          Ok s
      | None ->
          Result.map
            (fun s ->
              Hashtbl.replace c.statements name s;
              s)
            (prepare c.db (Statement.sql stmt))
    in
    Result.bind prepared (fun s ->
        Result.bind (bind c.db s params) (fun () -> run c.db s))

  let query c ?(params = [||]) sql =
    call c (fun c -> once c sql params (fun db s -> rows db s []))

  let exec c ?(params = [||]) sql =
    call c (fun c ->
        if Array.length params = 0 then
          (* Several statements allowed, as the module type promises. *)
          let rc = Sqlite3.exec c.db sql in
          if Sqlite3.Rc.is_success rc then Ok (Sqlite3.changes c.db)
          else Error (sql_error c.db rc)
        else once c sql params changes)

  let query_prepared c stmt params =
    call c (fun c -> cached c stmt params (fun db s -> rows db s []))

  let exec_prepared c stmt params =
    call c (fun c -> cached c stmt params changes)
end

include Braid_db.Make (Driver)

let config = Driver.config

let shutdown (config : config) =
  (* [Blocking.shutdown] waits for the calls in progress: not on the loop. *)
  ignore (Thread.create Blocking.shutdown config.blocking)
