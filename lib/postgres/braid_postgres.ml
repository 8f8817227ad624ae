module Pg = Postgresql
module Fd = Braid_io.Fd
module Value = Braid_db.Value
module Error = Braid_db.Error
module Statement = Braid_db.Statement

external dup_socket : int -> Unix.file_descr = "braid_postgres_dup_socket"

(* The driver; [Braid_db.Make] adds transactions and the pool. *)
module Driver = struct
  type config = {
    conninfo : string;
    connect_timeout : float;
    cancel_timeout : float;
  }

  let config ?(connect_timeout = 10.) ?(cancel_timeout = 5.) conninfo =
    { conninfo; connect_timeout; cancel_timeout }

  type connection = {
    pg : Pg.connection;
    fd : Fd.t;  (** A duplicate of libpq's socket, the loop's to wait on. *)
    peek : Bytes.t;  (** One byte for {!wait_readable}'s [MSG_PEEK]. *)
    prepared : (string, unit) Hashtbl.t;  (** Statement names prepared here. *)
    config : config;
    mutable broken : string option;  (** Why the connection is unusable. *)
    mutable closed : bool;
  }

  let backend_pid c = c.pg#backend_pid

  (* {1 Waiting on libpq's socket} *)

  (* The loop's registration is edge-triggered: it wakes a waiter only when
     bytes arrive after the wait began. libpq reads the socket itself and may
     leave bytes in it (a [PQconsumeInput] does one [recv] into its buffer), so
     waiting right away could wait for bytes that are already there. A
     non-blocking peek tells: bytes (or end of stream) mean read again, EAGAIN
     means wait. The loop polls only when this fiber suspends, so nothing can
     arrive unseen between the peek and the wait. *)
  let wait_readable c =
    let unix = Fd.to_unix c.fd in
    match Unix.recv unix c.peek 0 1 [ Unix.MSG_PEEK ] with
    | _ -> ()
    | exception
        Unix.Unix_error ((Unix.EAGAIN | Unix.EWOULDBLOCK | Unix.EINTR), _, _) ->
        Fd.await_readable c.fd
    | exception Unix.Unix_error _ ->
        (* A socket error (ECONNRESET): libpq's next read reports it. *)
        ()

  let rec flush c =
    match c.pg#flush with
    | Pg.Successful -> ()
    | Pg.Data_left_to_send ->
        (* libpq's documentation asks to read too while waiting to write, in
           case the server blocks writing to us: statements here are small,
           and a server answers only once the whole statement has arrived. *)
        Fd.await_writable c.fd;
        flush c

  (* [is_busy] parses what libpq has buffered without a system call: read
     ([PQconsumeInput], one recv) only when it wants more, after the peek
     says bytes are there. Reading first on every call cost three failed
     recvs per statement (just after sending, and again for the final
     [None]), measured with strace on the web benchmark's /db. *)
  let rec next_result c =
    if c.pg#is_busy then (
      wait_readable c;
      c.pg#consume_input;
      next_result c)
    else c.pg#get_result

  (* All of a statement's results, up to libpq's final [None]: the first
     failed one if any (a multi-statement string stops at its first error),
     else the last. *)
  let rec all_results c kept =
    match next_result c with
    | None -> kept
    | Some r -> (
        match kept with
        | Some k when k#status = Pg.Fatal_error -> all_results c kept
        | _ -> all_results c (Some r))

  (* {1 Opening} *)

  let connection_error = function
    | Pg.Connection_failure m -> m
    | e -> Pg.string_of_error e

  (* The socket can change while [PQconnectPoll] runs (libpq tries the next
     address, or retries without SSL), so each wait takes a fresh duplicate and
     releases it. *)
  let wait_socket pg ~write =
    Braid.Switch.run @@ fun sw ->
    let fd = Fd.of_unix ~sw (dup_socket pg#socket) in
    if write then Fd.await_writable fd else Fd.await_readable fd

  let rec establish pg = function
    | Pg.Polling_ok -> Ok ()
    | Pg.Polling_failed ->
        Error (Error.Connect_failed (String.trim pg#error_message))
    | Pg.Polling_reading ->
        wait_socket pg ~write:false;
        establish pg pg#connect_poll
    | Pg.Polling_writing ->
        wait_socket pg ~write:true;
        establish pg pg#connect_poll

  let finish pg =
    (* The connection is being discarded: an error closing it leaves nothing
       to do, and libpq frees it anyway. *)
    try pg#finish with Pg.Error _ -> ()

  let start conninfo =
    Braid_io.Blocking.run
      ~dispose:(function Ok pg -> finish pg | Error _ -> ())
      (fun () ->
        match new Pg.connection ~conninfo ~startonly:true () with
        | pg -> Ok pg
        | exception Pg.Error e ->
            Error (Error.Connect_failed (connection_error e)))

  let connect ~sw config =
    match start config.conninfo with
    | Error _ as e -> e
    | Ok pg -> (
        let opened =
          match
            Braid_io.Time.timeout config.connect_timeout (fun () ->
                (* libpq's doc: begin as if connect_poll had said "writing". *)
                establish pg Pg.Polling_writing)
          with
          | None ->
              Error
                (Error.Connect_failed
                   (Printf.sprintf "no connection within %gs"
                      config.connect_timeout))
          | Some r -> r
          | exception Pg.Error e ->
              Error (Error.Connect_failed (connection_error e))
          | exception e ->
              let bt = Printexc.get_raw_backtrace () in
              finish pg;
              Printexc.raise_with_backtrace e bt
        in
        match opened with
        | Error _ as e ->
            finish pg;
            e
        | Ok () -> (
            match
              pg#set_nonblocking true;
              pg#set_notice_processing `Quiet;
              Fd.of_unix ~sw (dup_socket pg#socket)
            with
            | fd ->
                Ok
                  {
                    pg;
                    fd;
                    peek = Bytes.create 1;
                    prepared = Hashtbl.create 8;
                    config;
                    broken = None;
                    closed = false;
                  }
            | exception Pg.Error e ->
                finish pg;
                Error (Error.Connect_failed (connection_error e))
            | exception Unix.Unix_error (e, _, _) ->
                (* No descriptor left for the duplicate (EMFILE). *)
                finish pg;
                Error (Error.Connect_failed (Unix.error_message e))))

  let close c =
    if not c.closed then (
      c.closed <- true;
      if c.broken = None then c.broken <- Some "closed";
      (* Not the loop's descriptor to report on: it is a duplicate, and
         libpq's own is closed by [finish] just after. *)
      (try Fd.close c.fd with Fd.Error _ -> ());
      finish c.pg)

  (* An idle connection has nothing to read: bytes (the server's "terminating
     connection" notice) or an end of stream mean the server is done with it. *)
  let is_usable c =
    c.broken = None
    &&
    match Unix.recv (Fd.to_unix c.fd) c.peek 0 1 [ Unix.MSG_PEEK ] with
    | _ ->
        c.broken <- Some "the server closed the idle connection";
        false
    | exception
        Unix.Unix_error ((Unix.EAGAIN | Unix.EWOULDBLOCK | Unix.EINTR), _, _) ->
        true
    | exception Unix.Unix_error (e, _, _) ->
        c.broken <- Some (Unix.error_message e);
        false

  (* {1 Running a statement} *)

  let lost c message =
    c.broken <- Some message;
    Error (Error.Connection_lost message)

  let cancel_retry = 0.5

  (* The binding's [request_cancel] sends libpq's cancel request only while
     another thread is inside a call on the connection (it was made for
     blocking use), never between two non-blocking calls as here; and the
     key [PQcancel] needs is libpq's secret. So the request goes as SQL:
     [pg_cancel_backend] on a short second connection, opened and run on the
     loop like any other (no thread; the server cancels a process of the
     same role). If it cannot be opened, draining finds out what happened. *)
  let request_cancel c =
    Braid.Switch.run @@ fun sw ->
    match connect ~sw c.config with
    | Error _ -> ()
    | Ok side ->
        Fun.protect
          ~finally:(fun () -> close side)
          (fun () ->
            try
              side.pg#send_query
                ~params:[| string_of_int c.pg#backend_pid |]
                "SELECT pg_cancel_backend($1)";
              flush side;
              ignore (all_results side None)
            with Pg.Error _ | Fd.Error _ -> ())

  (* Ask the server to stop the statement, then read its results to the end
     so that the connection is clean. Runs protected from the cancellation
     that brought us here, bounded by [cancel_timeout]. *)
  let cancel c =
    (* A server process that had not yet begun the statement when the request
       came ignores it (it cancels only a running statement): so the request
       is repeated every [cancel_retry] seconds until the results come. The
       results already read are dropped, so giving up a read is harmless. *)
    let rec until_stopped () =
      request_cancel c;
      match
        Braid_io.Time.timeout cancel_retry (fun () -> all_results c None)
      with
      | Some _ -> ()
      | None -> until_stopped ()
    in
    let wound_down =
      Braid_io.Time.timeout c.config.cancel_timeout until_stopped
    in
    match wound_down with
    | Some () -> ()
    | None -> c.broken <- Some "a cancelled statement did not stop in time"
    | exception (Pg.Error _ | Fd.Error _) ->
        c.broken <- Some "the connection failed while cancelling a statement"

  let sql_error r =
    let code =
      try r#error_field Pg.Error_field.SQLSTATE with Pg.Error _ -> ""
    in
    Error.Sql { code; message = String.trim r#error }

  (* [send] starts the statement; [interpret] reads its one result. *)
  let run c send interpret =
    match c.broken with
    | Some m -> Error (Error.Connection_lost m)
    | None -> (
        match
          send c.pg;
          flush c;
          all_results c None
        with
        | None -> Error (Error.Connection_lost "no result from the server")
        | Some r -> (
            match r#status with
            | Pg.Fatal_error | Pg.Bad_response | Pg.Nonfatal_error ->
                if c.pg#status = Pg.Bad then lost c (String.trim r#error)
                else Error (sql_error r)
            | Pg.Copy_in | Pg.Copy_out | Pg.Copy_both ->
                lost c "COPY is not supported"
            | _ -> interpret r)
        | exception Pg.Error e -> lost c (connection_error e)
        | exception Fd.Error { error; _ } -> lost c (Unix.error_message error)
        | exception (Braid.Cancelled as e) ->
            let bt = Printexc.get_raw_backtrace () in
            Braid.Fiber.protect (fun () -> cancel c);
            Printexc.raise_with_backtrace e bt
        | exception e ->
            (* Not a way this code fails (an exception of the binding's we do
               not know): the connection's state is unknown. *)
            c.broken <- Some (Printexc.to_string e);
            raise e)

  (* {2 Values} *)

  let nul_in_text =
    Error.Sql
      {
        code = "22021";
        message =
          "a text parameter contains a NUL byte, which PostgreSQL refuses";
      }

  let float_text f =
    match Float.classify_float f with
    | FP_nan -> "NaN"
    | FP_infinite -> if f > 0. then "Infinity" else "-Infinity"
    | _ -> Printf.sprintf "%.17g" f

  exception Nul_in_text

  (* Text parameters, and which are binary (only blobs). *)
  let encode params =
    let binary = ref false in
    let texts =
      Array.map
        (function
          | Value.Null -> Pg.null
          | Bool b -> if b then "t" else "f"
          | Int i -> string_of_int i
          | Float f -> float_text f
          | Text s -> if String.contains s '\000' then raise Nul_in_text else s
          | Blob s ->
              binary := true;
              s)
        params
    in
    let binary_params =
      if !binary then
        Some (Array.map (function Value.Blob _ -> true | _ -> false) params)
      else None
    in
    (texts, binary_params)

  (* Type oids from PostgreSQL's pg_type.dat. *)
  let decode oid text =
    match oid with
    | 16 -> Value.Bool (text = "t")
    | 20 | 21 | 23 | 26 -> (
        match int_of_string_opt text with Some i -> Int i | None -> Text text)
    | 700 | 701 -> (
        match text with
        | "NaN" -> Float Float.nan
        | "Infinity" -> Float Float.infinity
        | "-Infinity" -> Float Float.neg_infinity
        | _ -> (
            match float_of_string_opt text with
            | Some f -> Float f
            | None -> Text text))
    | 17 -> Blob (Pg.unescape_bytea text)
    | _ -> Text text

  let rows r =
    let columns = r#nfields in
    let oids = Array.init columns r#ftype_oid in
    List.init r#ntuples (fun i ->
        Array.init columns (fun j ->
            if r#getisnull i j then Value.Null
            else decode oids.(j) (r#getvalue i j)))

  (* A COMMIT of a transaction in which a statement failed succeeds, as a
     ROLLBACK: the caller must hear that nothing was committed. *)
  let changed_rows sql r =
    if
      r#cmd_status = "ROLLBACK"
      && String.uppercase_ascii (String.trim sql) = "COMMIT"
    then
      Error
        (Error.Sql
           {
             code = "40000";
             message =
               "COMMIT rolled the transaction back: a statement of it failed";
           })
    else Ok (Option.value (int_of_string_opt r#cmd_tuples) ~default:0)

  let with_params params f =
    match encode params with
    | exception Nul_in_text -> Error nul_in_text
    | texts, binary_params -> f texts binary_params

  let send_statement ?(params = [||]) sql =
    if Array.length params = 0 then
      Ok (fun (pg : Pg.connection) -> pg#send_query sql)
    else
      with_params params (fun texts binary_params ->
          Ok
            (fun (pg : Pg.connection) ->
              pg#send_query ~params:texts ?binary_params sql))

  let query c ?params sql =
    match send_statement ?params sql with
    | Error _ as e -> e
    | Ok send -> run c send (fun r -> Ok (rows r))

  let exec c ?params sql =
    match send_statement ?params sql with
    | Error _ as e -> e
    | Ok send -> run c send (changed_rows sql)

  let prepare c stmt =
    let name = Statement.name stmt in
    if Hashtbl.mem c.prepared name then Ok name
    else
      match
        run c
          (fun pg -> pg#send_prepare name (Statement.sql stmt))
          (fun _ -> Ok ())
      with
      | Ok () ->
          Hashtbl.replace c.prepared name ();
          Ok name
      | Error _ as e -> e

  let run_prepared c stmt params interpret =
    match prepare c stmt with
    | Error _ as e -> e
    | Ok name ->
        with_params params (fun texts binary_params ->
            run c
              (fun pg ->
                pg#send_query_prepared ~params:texts ?binary_params name)
              interpret)

  let query_prepared c stmt params =
    run_prepared c stmt params (fun r -> Ok (rows r))

  let exec_prepared c stmt params =
    run_prepared c stmt params (changed_rows (Statement.sql stmt))
end

include Braid_db.Make (Driver)

let config = Driver.config
let backend_pid = Driver.backend_pid
