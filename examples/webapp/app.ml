(* A small web application on braid_web and braid_server: pages, a JSON API with a
   cookie session, forms, query parameters, pool work, a streamed response,
   static files and a custom 404 page. docs/web-apps.md walks through it. *)

open Braid_web
open Handler.Syntax

(* The application's state: notes, shared by every domain. *)
type notes = string list Atomic.t

let rec add_note (notes : notes) text =
  let old = Atomic.get notes in
  if not (Atomic.compare_and_set notes old (text :: old)) then
    add_note notes text

(* GET /hello/:name?greeting=Hi *)
let hello r =
  let* greeting = Query.get r "greeting" in
  let name = Option.get (Handler.param r "name") in
  Response.string
    (Printf.sprintf "%s, %s!\n" (Option.value greeting ~default:"Hello") name)

(* POST /login, a form: the user's name in a cookie. *)
let login r =
  let* form = Form.urlencoded r in
  match List.assoc_opt "user" form with
  | Some user when user <> "" ->
      Response.redirect ~status:303 "/me"
      |> Cookie.set ~path:"/" ~http_only:true ~same_site:Lax "user"
           (Query.encode [ ("u", user) ])
  | _ -> Response.error 400 "user is required"

let current_user r =
  Cookie.get r "user"
  |> Result.map (fun cookie ->
         match Option.map Query.decode cookie with
         | Some (Ok [ ("u", user) ]) -> Some user
         | _ -> None)

(* GET /me: who is logged in, as JSON. *)
let me r =
  let* user = current_user r in
  match user with
  | Some user -> Json.response (`Assoc [ ("user", `String user) ])
  | None -> Json.response ~status:401 (`Assoc [ ("error", `String "log in") ])

let logout _ =
  Response.redirect ~status:303 "/" |> Cookie.delete ~path:"/" "user"

(* The JSON API. *)
let list_notes notes _ =
  Json.response (`List (List.rev_map (fun n -> `String n) (Atomic.get notes)))

let post_note notes r =
  let* json = Json.body r in
  match json with
  | `Assoc [ ("text", `String text) ] when text <> "" ->
      add_note notes text;
      Json.response ~status:201 (`Assoc [ ("text", `String text) ])
  | _ -> Response.error 422 {|expected {"text": "..."}|}

(* CPU-heavy work goes to the pool; the event loop keeps serving. *)
let rec fib n = if n < 2 then n else fib (n - 1) + fib (n - 2)

let fib_route pool r =
  match Option.bind (Handler.param r "n") int_of_string_opt with
  | Some n when n >= 0 && n <= 35 ->
      let result =
        Braid_sync.Promise.await (Braid_pool.async pool (fun () -> fib n))
      in
      Json.response (`Assoc [ ("n", `Int n); ("fib", `Int result) ])
  | _ -> Response.error 400 "n must be an integer from 0 to 35"

(* A response written as it is produced. *)
let countdown r =
  let* from = Query.get r "from" in
  let from = Option.value (Option.bind from int_of_string_opt) ~default:3 in
  Response.stream (fun w ->
      for i = min from 100 downto 0 do
        Response.Writer.write w (string_of_int i ^ "\n");
        Response.Writer.flush w
      done)

(* An upload, streamed: the file's bytes are counted, never kept. *)
let upload r =
  let* sizes =
    Multipart.fold r ~init:[] (fun acc -> function
      | Part p -> (p.name, 0) :: acc
      | Data d -> (
          match acc with
          | (n, s) :: rest -> (n, s + String.length d) :: rest
          | [] -> [])
      | End_of_part -> acc)
  in
  Json.response (`Assoc (List.rev_map (fun (n, s) -> (n, `Int s)) sizes))

(* Middleware: every response the server sends, its own 404s included. *)
let security_headers next r =
  next r |> Response.with_header "X-Content-Type-Options" "nosniff"

let not_found _request (r : Response.t) =
  if r.status = 404 then
    Response.html ~status:404
      "<h1>Not found</h1><p><a href=\"/\">Home</a></p>\n"
  else r

let router ~pool ~root =
  let notes = Atomic.make [] in
  let api =
    Router.(
      empty
      |> get "/notes" (list_notes notes)
      |> post "/notes" (post_note notes)
      |> get "/fib/:n" (fib_route pool))
  in
  Router.(
    empty |> use security_headers |> on_error not_found
    |> get "/hello/:name" hello |> post "/login" login |> get "/me" me
    |> post "/logout" logout |> get "/countdown" countdown
    (* Uploads may be larger than the server's body limit (1 MiB by
       default): the route sets its own. *)
    |> add ~max_body:(10 * 1024 * 1024) POST "/upload" upload
    |> scope "/api" api
    |> get "/*path" (Static.handler ~root ()))
