open Braid_web

type database = { url : string; pool_size : int }

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

(* TODO (lead): replace with the handlers described in the interface, on a
   braid_postgres pool of [database.pool_size] connections to
   [database.url] created here (once, when the server starts). *)
let not_implemented _ =
  Response.error 501 "the database tests wait for braid_postgres"

let add (_ : database) router =
  router
  |> Router.get "/db" not_implemented
  |> Router.get "/queries" not_implemented
  |> Router.get "/updates" not_implemented
  |> Router.get "/fortunes" not_implemented
