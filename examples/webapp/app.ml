(* A to-do application on braid_web: accounts with Argon2id passwords,
   sessions kept in the database, CSRF-checked forms, a JSON API, a file
   attached to each item, and every open page of a user updated over a
   WebSocket. SQLite through braid_sqlite, so a slow query never holds the
   event loop. docs/web-apps.md explains each piece. *)

open Braid_web
open Handler.Syntax
module Db = Braid_sqlite
module Sessions = Braid_db.Session_store.Make (Db)
module Statement = Braid_db.Statement

type t = {
  db : Db.pool;
  files : string;  (** Where attachments are kept, one file per item. *)
  pages : (string, string) Hub.Topics.hubs;  (** A user's open pages. *)
}

let schema =
  "CREATE TABLE IF NOT EXISTS users (name TEXT PRIMARY KEY, hash TEXT NOT \
   NULL); CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY, owner TEXT \
   NOT NULL, title TEXT NOT NULL, file TEXT)"

(* Once, before serving: the tables, and the sessions' table. *)
let create_tables db =
  Db.use db (fun c ->
      Result.bind (Db.exec c schema) (fun _ -> Sessions.create_table c))

let create ~files db = { db; files; pages = Hub.Topics.create () }

(* {1 The database} *)

let add_user = Statement.make "INSERT INTO users (name, hash) VALUES (?1, ?2)"
let user_hash = Statement.make "SELECT hash FROM users WHERE name = ?1"

let items_of =
  Statement.make
    "SELECT id, title, file IS NOT NULL FROM items WHERE owner = ?1 ORDER BY id"

let add_item =
  Statement.make "INSERT INTO items (owner, title) VALUES (?1, ?2) RETURNING id"

let attach =
  Statement.make "UPDATE items SET file = ?3 WHERE id = ?1 AND owner = ?2"

let item_file =
  Statement.make "SELECT file FROM items WHERE id = ?1 AND owner = ?2"

(* A failed query is the server's fault: a 500, logged with its reason. *)
let query t statement params =
  match Db.use t.db (fun c -> Db.query_prepared c statement params) with
  | Ok rows -> rows
  | Error e -> failwith (Braid_db.Error.to_string e)

type item = { id : int; title : string; has_file : bool }

let items t user =
  query t items_of [| Text user |]
  |> List.map (function
       | [| Braid_db.Value.Int id; Text title; Int f |] ->
           { id; title; has_file = f = 1 }
       | _ -> failwith "items: unexpected row")

(* {1 Pages} *)

let document ?status heading content =
  let open Tyxml.Html in
  Braid_tyxml.page ?status
    (html
       (head (title (txt heading)) [ meta ~a:[ a_charset "utf-8" ] () ])
       (body (h1 [ txt heading ] :: content)))

let page r ~heading content =
  let flash (category, text) =
    Tyxml.Html.(p ~a:[ a_class [ category ] ] [ txt text ])
  in
  document heading (List.map flash (Flash.take r) @ content)

let error_page _ (default : Response.t) =
  document ~status:default.status
    (Printf.sprintf "Error %d" default.status)
    Tyxml.Html.[ a ~a:[ a_href "/" ] [ txt "Home" ] ]

let csrf_field = Braid_tyxml.csrf_input

let credentials r ~heading ~action =
  let open Tyxml.Html in
  page r ~heading
    [
      form
        ~a:[ a_action ("/" ^ action); a_method `Post ]
        [
          csrf_field r;
          input ~a:[ a_name "username"; a_placeholder "user name" ] ();
          input ~a:[ a_name "password"; a_input_type `Password ] ();
          button ~a:[ a_id action; a_button_type `Submit ] [ txt heading ];
        ];
    ]

(* With [request], the item's upload form, whose CSRF token is that
   request's session's. An item pushed to other pages has none: they may be
   other sessions of the user, whose tokens differ; it gets one on reload. *)
let item_element ?request { id; title = text; has_file } =
  let open Tyxml.Html in
  let path = Printf.sprintf "/items/%d/attachment" id in
  let upload r =
    form
      ~a:[ a_action path; a_method `Post; a_enctype "multipart/form-data" ]
      [
        csrf_field r;
        input ~a:[ a_input_type `File; a_name "file" ] ();
        button ~a:[ a_button_type `Submit ] [ txt "Attach" ];
      ]
  in
  li
    (span ~a:[ a_class [ "title" ] ] [ txt text ]
     ::
     (if has_file then [ txt " "; a ~a:[ a_href path ] [ txt "(file)" ] ]
      else [])
    @ Option.to_list (Option.map upload request))

let home t r user =
  let open Tyxml.Html in
  page r ~heading:(user ^ "'s to-do list")
    [
      ul ~a:[ a_id "items" ] (List.map (item_element ~request:r) (items t user));
      form
        ~a:[ a_id "add"; a_action "/items"; a_method `Post ]
        [ csrf_field r; input ~a:[ a_name "title" ] (); button [ txt "Add" ] ];
      form
        ~a:[ a_action "/logout"; a_method `Post ]
        [ csrf_field r; button [ txt "Log out" ] ];
      script ~a:[ a_src "/app.js" ] (txt "");
    ]

(* Appends what the server pushes: an item it printed with TyXML, escaped. *)
let app_js =
  {|const items = document.getElementById("items");
const scheme = location.protocol === "https:" ? "wss://" : "ws://";
const updates = new WebSocket(scheme + location.host + "/updates");
updates.onmessage = (event) => items.insertAdjacentHTML("beforeend", event.data);
|}

(* {1 Accounts} *)

let signed_in f r =
  match Session.get r "user" with
  | Some user -> f r user
  | None -> Response.redirect ~status:303 "/login"

let start_session r user =
  Session.rotate r;
  Session.set r "user" user;
  Response.redirect ~status:303 "/"

let with_credentials r f =
  let* form = Form.urlencoded r in
  let* name = Form.field form "username" in
  let* password = Form.field form "password" in
  f name password

let sign_up t r =
  with_credentials r @@ fun name password ->
  let hash = Braid_tls.Password.hash_on_pool password in
  match
    Db.use t.db (fun c ->
        Db.exec_prepared c add_user [| Text name; Text hash |])
  with
  | Ok _ -> start_session r name
  | Error (Sql { code = "CONSTRAINT"; _ }) ->
      Flash.add ~category:"error" r "That user name is taken.";
      Response.redirect ~status:303 "/signup"
  | Error e -> failwith (Braid_db.Error.to_string e)

let log_in t r =
  with_credentials r @@ fun name password ->
  match query t user_hash [| Text name |] with
  | [ [| Text hash |] ] when Braid_tls.Password.verify_on_pool password ~hash ->
      start_session r name
  | _ ->
      Flash.add ~category:"error" r "Wrong user name or password.";
      Response.redirect ~status:303 "/login"

(* {1 Items and their updates} *)

let new_item t user title =
  match query t add_item [| Text user; Text title |] with
  | [ [| Int id |] ] ->
      let item = { id; title; has_file = false } in
      Hub.publish
        (Hub.Topics.hub t.pages user)
        (Braid_tyxml.string_of_elt (item_element item));
      item
  | _ -> failwith "add_item: no id"

let add_from_form t r user =
  let* form = Form.urlencoded r in
  let* title = Form.field form "title" in
  ignore (new_item t user title);
  Response.redirect ~status:303 "/"

let item_json { id; title; has_file } =
  `Assoc
    [
      ("id", `Int id); ("title", `String title); ("attachment", `Bool has_file);
    ]

let api_items t _ user =
  Json.response (`List (List.map item_json (items t user)))

let api_add t r user =
  match Json.body r with
  | Ok (`Assoc fields) -> (
      match List.assoc_opt "title" fields with
      | Some (`String title) when String.trim title <> "" ->
          Json.response ~status:201 (item_json (new_item t user title))
      | _ -> Response.error 400 "a title is required")
  | Ok _ -> Response.error 400 "a JSON object is required"
  | Error answer -> answer

let item_id r = int_of_string_opt (Option.get (Handler.param r "id"))

(* The form's CSRF token is checked before the file is read (it comes
   first); the item must be the user's. *)
let upload t r user =
  match item_id r with
  | Some id when query t item_file [| Int id; Text user |] <> [] -> (
      let* parts = Multipart.parts r in
      match
        List.find_opt (fun ((p : Multipart.part), _) -> p.name = "file") parts
      with
      | None -> Response.error 400 "a file is required"
      | Some (_, content) ->
          let path = Filename.concat t.files (string_of_int id) in
          Braid.Switch.run (fun sw ->
              let file =
                Braid_io.File.open_out ~sw ~create:(`Or_truncate 0o600) path
              in
              Braid_io.File.write_string file content);
          ignore (query t attach [| Int id; Text user; Text path |]);
          Response.redirect ~status:303 "/")
  | _ -> Response.error 404 "no such item"

let download t r user =
  match
    Option.map (fun id -> query t item_file [| Int id; Text user |]) (item_id r)
  with
  | Some [ [| Text path |] ] ->
      Static.file r path
      |> Response.with_header "Content-Disposition" "attachment"
  | _ -> Response.error 404 "no such item"

(* Every page of [user] gets the items added elsewhere until it goes. *)
let updates t r user =
  Websocket.accept r (fun ws ->
      Hub.forward (Hub.Topics.hub t.pages user) ws (fun () ->
          ignore (Websocket.until_closed ws)))

let router t =
  let in_ f = signed_in (f t) in
  Router.(
    empty
    |> use (Session.middleware (Sessions.store t.db))
    |> on_error error_page
    |> get "/" (in_ home)
    |> get "/signup" (credentials ~heading:"Sign up" ~action:"signup")
    |> post "/signup" (sign_up t)
    |> get "/login" (credentials ~heading:"Log in" ~action:"login")
    |> post "/login" (log_in t)
    |> post "/logout" (fun r ->
           Session.invalidate r;
           Response.redirect ~status:303 "/login")
    |> post "/items" (in_ add_from_form)
    |> add
         ~max_body:(10 * 1024 * 1024)
         POST "/items/:id/attachment" (in_ upload)
    |> get "/items/:id/attachment" (in_ download)
    |> get "/updates" (in_ updates)
    |> get "/app.js" (fun _ ->
           Response.string ~content_type:"text/javascript; charset=utf-8" app_js)
    |> scope ~middleware:[ Csrf.require_header ] "/api"
         (empty |> get "/items" (in_ api_items) |> post "/items" (in_ api_add)))
