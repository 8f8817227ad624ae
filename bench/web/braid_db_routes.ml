open Braid_web
module Pg = Braid_postgres
module Value = Braid_db.Value

type database = { url : string; pool_size : int }
type pool = Pg.pool

let random_id () = 1 + Random.int 10_000

let query_count request =
  match Query.get request "queries" with
  | Ok (Some v) -> (
      match int_of_string_opt v with Some n -> max 1 (min 500 n) | None -> 1)
  | Ok None | Error _ -> 1

let world_json ~id ~random_number =
  `Assoc [ ("id", `Int id); ("randomNumber", `Int random_number) ]

let fortunes_page rows =
  let rows =
    (0, "Additional fortune added at request time.") :: rows
    |> List.stable_sort (fun (_, a) (_, b) -> String.compare a b)
  in
  let b = Buffer.create 2048 in
  Buffer.add_string b
    "<!DOCTYPE \
     html><html><head><title>Fortunes</title></head><body><table><tr><th>id</th><th>message</th></tr>";
  List.iter
    (fun (id, message) ->
      Printf.bprintf b "<tr><td>%d</td><td>%s</td></tr>" id
        (Html.escape message))
    rows;
  Buffer.add_string b "</table></body></html>";
  Response.html (Buffer.contents b)

(* {1 The pool} *)

let open_pool ~sw database =
  Pg.pool ~sw ~max_size:database.pool_size (Pg.config database.url)

(* {1 The statements}, prepared on each connection the first time it runs
   them (Braid_db.Statement): the same SQL as the peers. *)

let select_world =
  Braid_db.Statement.make "SELECT id, randomnumber FROM world WHERE id = $1"

let update_world =
  Braid_db.Statement.make "UPDATE world SET randomnumber = $2 WHERE id = $1"

let select_fortunes = Braid_db.Statement.make "SELECT id, message FROM fortune"

(* {1 The handlers}

   A database error is [Error e] all the way up and answers 500 with
   [e] in the body; an unexpected row shape is a [Sql]-less error of its
   own. *)

exception Bad_row of string

let fail e = Response.error 500 (Braid_db.Error.to_string e)
let ( let* ) = Result.bind

(* One world row, [(id, randomnumber)], on connection [c]. *)
let fetch_world c =
  let* rows = Pg.query_prepared c select_world [| Value.Int (random_id ()) |] in
  match rows with
  | [ [| Value.Int id; Value.Int n |] ] -> Ok (id, n)
  | _ -> raise (Bad_row "SELECT from world: not one row of two integers")

let fetch_worlds c n =
  let rec go i acc =
    if i = 0 then Ok (List.rev acc)
    else
      let* w = fetch_world c in
      go (i - 1) (w :: acc)
  in
  go n []

let worlds_json worlds =
  Json.response
    (`List (List.map (fun (id, n) -> world_json ~id ~random_number:n) worlds))

let answer f =
  match f () with
  | Ok response -> response
  | Error e -> fail e
  | exception Bad_row why -> Response.error 500 why

let db pool _request =
  answer @@ fun () ->
  let* id, n = Pg.use (Braid_sync.Promise.await pool) fetch_world in
  Ok (Json.response (world_json ~id ~random_number:n))

(* /queries and /updates hold one pool connection for the whole request,
   as the Rust peer does (Go takes one per statement). Measured against one
   connection per select for /queries?queries=20 (256 wrk connections, 4 s
   runs, server and database each on a core): Braid's server CPU 304-411 us
   per request here vs 356-382 us, the database's 361-538 us vs 325-351 us;
   the sums overlap within the noise, so the simpler one stays. *)
let queries pool request =
  let n = query_count request in
  answer @@ fun () ->
  let* worlds =
    Pg.use (Braid_sync.Promise.await pool) (fun c -> fetch_worlds c n)
  in
  Ok (worlds_json worlds)

let updates pool request =
  let n = query_count request in
  answer @@ fun () ->
  let* worlds =
    Pg.use (Braid_sync.Promise.await pool) (fun c ->
        let* worlds = fetch_worlds c n in
        let worlds = List.map (fun (id, _) -> (id, random_id ())) worlds in
        (* One autocommitted statement per row, after all the selects. *)
        let rec write = function
          | [] -> Ok worlds
          | (id, n) :: rest ->
              let* _changed =
                Pg.exec_prepared c update_world [| Value.Int id; Value.Int n |]
              in
              write rest
        in
        write worlds)
  in
  Ok (worlds_json worlds)

let fortunes pool _request =
  answer @@ fun () ->
  let* rows =
    Pg.use (Braid_sync.Promise.await pool) (fun c ->
        Pg.query_prepared c select_fortunes [||])
  in
  let rows =
    List.map
      (function
        | [| Value.Int id; Value.Text message |] -> (id, message)
        | _ -> raise (Bad_row "SELECT from fortune: not (integer, text)"))
      rows
  in
  Ok (fortunes_page rows)

let add pool router =
  router
  |> Router.get "/db" (db pool)
  |> Router.get "/queries" (queries pool)
  |> Router.get "/updates" (updates pool)
  |> Router.get "/fortunes" (fortunes pool)
