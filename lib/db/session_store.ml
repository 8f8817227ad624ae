exception Failed of Error.t

let () =
  Printexc.register_printer (function
    | Failed e -> Some ("session store: " ^ Error.to_string e)
    | _ -> None)

module type DATABASE = sig
  type connection
  type pool

  val use : pool -> (connection -> ('a, Error.t) result) -> ('a, Error.t) result

  val exec :
    connection -> ?params:Value.t array -> string -> (int, Error.t) result

  val query_prepared :
    connection ->
    Statement.t ->
    Value.t array ->
    (Value.t array list, Error.t) result

  val exec_prepared :
    connection -> Statement.t -> Value.t array -> (int, Error.t) result
end

(* The table's name goes into SQL text, so it is checked, not quoted. *)
let checked_table table =
  let valid_char i c =
    match c with 'a' .. 'z' | '_' -> true | '0' .. '9' -> i > 0 | _ -> false
  in
  let n = String.length table in
  let rec valid i = i = n || (valid_char i table.[i] && valid (i + 1)) in
  if n = 0 || n > 63 || not (valid 0) then
    invalid_arg
      (Printf.sprintf "Session_store: %S is not an SQL identifier" table);
  table

let sweep_interval = 60.

module Make (D : DATABASE) = struct
  let create_table ?(table = "braid_sessions") c =
    let table = checked_table table in
    D.exec c
      (Printf.sprintf
         "CREATE TABLE IF NOT EXISTS %s (key TEXT PRIMARY KEY, data TEXT NOT \
          NULL, expires DOUBLE PRECISION NOT NULL); CREATE INDEX IF NOT EXISTS \
          %s_expires ON %s (expires)"
         table table table)
    |> Result.map ignore

  let or_fail = function Ok v -> v | Error e -> raise (Failed e)

  let store ?(table = "braid_sessions") pool =
    let table = checked_table table in
    let statement fmt = Printf.ksprintf Statement.make fmt in
    let find =
      statement "SELECT data FROM %s WHERE key = $1 AND expires > $2" table
    and save =
      statement
        "INSERT INTO %s (key, data, expires) VALUES ($1, $2, $3) ON CONFLICT \
         (key) DO UPDATE SET data = excluded.data, expires = excluded.expires"
        table
    and delete = statement "DELETE FROM %s WHERE key = $1" table
    and sweep = statement "DELETE FROM %s WHERE expires <= $1" table in
    (* When this store last deleted expired rows: shared by every domain that
       saves through it; two sweeping at once only repeat a cheap DELETE. *)
    let last_sweep = Atomic.make neg_infinity in
    let run f = or_fail (D.use pool f) in
    Braid_web.Session.of_backend
      {
        find =
          (fun ~key ~now ->
            match
              run (fun c -> D.query_prepared c find [| Text key; Float now |])
            with
            | [ [| Text data |] ] -> Some data
            | _ -> None);
        save =
          (fun ~key ~data ~expires ~now ->
            let last = Atomic.get last_sweep in
            if
              now -. last >= sweep_interval
              && Atomic.compare_and_set last_sweep last now
            then ignore (run (fun c -> D.exec_prepared c sweep [| Float now |]));
            ignore
              (run (fun c ->
                   D.exec_prepared c save
                     [| Text key; Text data; Float expires |])));
        delete =
          (fun ~key ->
            ignore (run (fun c -> D.exec_prepared c delete [| Text key |])));
      }
end
