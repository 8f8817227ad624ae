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
  lock : Mutex.t;  (** Guards [pages], never held across a suspension. *)
  pages : (string, string Hub.t) Hashtbl.t;
      (** Per user: the hub every open page of theirs listens to. *)
}

let schema =
  "CREATE TABLE IF NOT EXISTS users (name TEXT PRIMARY KEY, hash TEXT NOT \
   NULL); CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY, owner TEXT \
   NOT NULL, title TEXT NOT NULL, file TEXT)"

let create ~files db =
  let ready =
    Db.use db (fun c ->
        Result.bind (Db.exec c schema) (fun _ -> Sessions.create_table c))
  in
  Result.map
    (fun () -> { db; files; lock = Mutex.create (); pages = Hashtbl.create 8 })
    ready

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
let run t f =
  match Db.use t.db f with
  | Ok v -> v
  | Error e -> failwith (Braid_db.Error.to_string e)

let query t statement params =
  run t (fun c -> Db.query_prepared c statement params)

type item = { id : int; title : string; has_file : bool }

let items t user =
  query t items_of [| Text user |]
  |> List.map (function
       | [| Braid_db.Value.Int id; Text title; Int f |] ->
           { id; title; has_file = f = 1 }
       | _ -> failwith "items: unexpected row")

(* {1 Pages} *)

let page r ~heading content =
  let open Tyxml.Html in
  let flash =
    List.map
      (fun (category, text) -> p ~a:[ a_class [ category ] ] [ txt text ])
      (Flash.take r)
  in
  Braid_tyxml.page
    (html
       (head (title (txt heading)) [ meta ~a:[ a_charset "utf-8" ] () ])
       (body ((h1 [ txt heading ] :: flash) @ content)))

let csrf_field r =
  Tyxml.Html.(
    input
      ~a:
        [ a_input_type `Hidden; a_name Csrf.field_name; a_value (Csrf.token r) ]
      ())

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

let item_element r { id; title = text; has_file } =
  let open Tyxml.Html in
  let path = Printf.sprintf "/items/%d/attachment" id in
  li
    (txt text
     ::
     (if has_file then [ txt " "; a ~a:[ a_href path ] [ txt "(file)" ] ]
      else [])
    @ [
        form
          ~a:[ a_action path; a_method `Post; a_enctype "multipart/form-data" ]
          [
            csrf_field r;
            input ~a:[ a_input_type `File; a_name "file" ] ();
            button ~a:[ a_button_type `Submit ] [ txt "Attach" ];
          ];
      ])

let home t r user =
  let open Tyxml.Html in
  page r ~heading:(user ^ "'s to-do list")
    [
      ul ~a:[ a_id "items" ] (List.map (item_element r) (items t user));
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

let error_page _request (default : Response.t) =
  let open Tyxml.Html in
  let status = default.status in
  Braid_tyxml.page ~status
    (html
       (head (title (txt "Sorry")) [])
       (body
          [
            h1 [ txt (Printf.sprintf "Error %d" status) ];
            a ~a:[ a_href "/" ] [ txt "Home" ];
          ]))

(* {1 Accounts} *)

let user r = Session.get r "user"

let signed_in f r =
  match user r with
  | Some user -> f r user
  | None -> Response.redirect ~status:303 "/login"

let start_session r user =
  Session.rotate r;
  Session.set r "user" user;
  Response.redirect ~status:303 "/"

let form_credentials r =
  Result.bind (Form.urlencoded r) (fun form ->
      match
        (List.assoc_opt "username" form, List.assoc_opt "password" form)
      with
      | Some name, Some password when name <> "" && password <> "" ->
          Ok (name, password)
      | _ ->
          Error (Response.error 400 "a user name and a password are required"))

let sign_up t r =
  let* name, password = form_credentials r in
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
  let* name, password = form_credentials r in
  match query t user_hash [| Text name |] with
  | [ [| Text hash |] ] when Braid_tls.Password.verify_on_pool password ~hash ->
      start_session r name
  | _ ->
      Flash.add ~category:"error" r "Wrong user name or password.";
      Response.redirect ~status:303 "/login"

(* {1 Items and their updates} *)

let hub t user =
  Mutex.protect t.lock (fun () ->
      match Hashtbl.find_opt t.pages user with
      | Some hub -> hub
      | None ->
          let hub = Hub.create ~capacity:64 () in
          Hashtbl.replace t.pages user hub;
          hub)

let new_item t r user title =
  match query t add_item [| Text user; Text title |] with
  | [ [| Int id |] ] ->
      let item = { id; title; has_file = false } in
      Hub.publish (hub t user) (Braid_tyxml.string_of_elt (item_element r item));
      item
  | _ -> failwith "add_item: no id"

let add_from_form t r user =
  let* form = Form.urlencoded r in
  match List.assoc_opt "title" form with
  | Some title when String.trim title <> "" ->
      ignore (new_item t r user title);
      Flash.add ~category:"info" r "Added.";
      Response.redirect ~status:303 "/"
  | _ -> Response.error 400 "a title is required"

let item_json { id; title; has_file } =
  `Assoc
    [
      ("id", `Int id); ("title", `String title); ("attachment", `Bool has_file);
    ]

let api_items t r user =
  ignore r;
  Json.response (`List (List.map item_json (items t user)))

let api_add t r user =
  let* json = Json.body r in
  match json with
  | `Assoc fields -> (
      match List.assoc_opt "title" fields with
      | Some (`String title) when String.trim title <> "" ->
          Json.response ~status:201 (item_json (new_item t r user title))
      | _ -> Response.error 400 "a title is required")
  | _ -> Response.error 400 "a JSON object is required"

let item_id r = int_of_string_opt (Option.get (Handler.param r "id"))

(* The file goes to a temporary file as it arrives, then takes the item's
   attachment's place; nothing is written before the form's CSRF token was
   checked (the fold sees no part before it) and the item found the user's. *)
let upload t r user =
  match item_id r with
  | Some id when query t item_file [| Int id; Text user |] <> [] -> (
      let path = Filename.concat t.files (string_of_int id) in
      let partial = path ^ ".part" in
      Braid.Switch.run @@ fun sw ->
      let* out, _ =
        Multipart.fold r ~init:(None, false) (fun (out, writing) -> function
          | Part { name = "file"; _ } when Option.is_none out ->
              let create = `Or_truncate 0o600 in
              (Some (Braid_io.File.open_out ~sw ~create partial), true)
          | Data chunk when writing ->
              Braid_io.File.write_string (Option.get out) chunk;
              (out, writing)
          | Part _ | End_of_part | Data _ -> (out, false))
      in
      match out with
      | None -> Response.error 400 "a file is required"
      | Some out ->
          Braid_io.File.close out;
          Unix.rename partial path;
          ignore
            (run t (fun c ->
                 Db.exec_prepared c attach [| Int id; Text user; Text path |]));
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
      Hub.forward (hub t user) ws (fun () ->
          let rec until_closed () =
            match Websocket.receive ws with
            | `Close _ -> ()
            | `Text _ | `Binary _ -> until_closed ()
          in
          until_closed ()))

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
