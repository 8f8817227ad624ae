(* The browser harness's own stand-in for the to-do application: the
   smallest server that honours the page contract browser_test.py drives
   (see its header), so that the harness is proven before the real
   application exists and keeps being proven after. Not an example to copy:
   users, sessions and items live in memory, passwords are kept and compared
   in clear, there is no CSRF token.

     stand_in.exe --port N --data DIR

   DIR must exist (the contract gives every server a fresh one); the
   stand-in writes nothing there. *)

open Braid_web
open Handler.Syntax
module Mutex = Braid_sync.Mutex
module Channel = Braid_sync.Channel

(* {1 State} *)

(* What one open page of a user is sent: printed [<li>] elements. *)
type subscriber = { id : int; outbox : string Channel.t }

type state = {
  lock : Mutex.t;  (** Held to read or change the tables, never to send. *)
  passwords : (string, string) Hashtbl.t;  (** User name to password. *)
  sessions : (string, string) Hashtbl.t;  (** Session token to user name. *)
  items : (string, string list) Hashtbl.t;  (** User to titles, newest first. *)
  mutable subscribers : (string * subscriber) list;  (** By user name. *)
  mutable next_subscriber : int;
}

let create () =
  {
    lock = Mutex.create ();
    passwords = Hashtbl.create 8;
    sessions = Hashtbl.create 8;
    items = Hashtbl.create 8;
    subscribers = [];
    next_subscriber = 0;
  }

let locked state f = Mutex.protect state.lock f

(* {1 Pages} *)

let page ~heading content =
  let open Tyxml.Html in
  Braid_tyxml.page
    (html
       (head (title (txt heading)) [ meta ~a:[ a_charset "utf-8" ] () ])
       (body (h1 [ txt heading ] :: content)))

let item_element text = Tyxml.Html.(li [ txt text ])

let credentials_page ~heading ~action ~button_id =
  let open Tyxml.Html in
  page ~heading
    [
      form
        ~a:[ a_action action; a_method `Post ]
        [
          label [ txt "User name "; input ~a:[ a_name "username" ] () ];
          label
            [
              txt "Password ";
              input ~a:[ a_name "password"; a_input_type `Password ] ();
            ];
          button ~a:[ a_id button_id; a_button_type `Submit ] [ txt heading ];
        ];
    ]

let home_page ~user titles =
  let open Tyxml.Html in
  page ~heading:(user ^ "'s to-do list")
    [
      ul ~a:[ a_id "items" ] (List.rev_map item_element titles);
      form
        ~a:[ a_id "add"; a_action "/items"; a_method `Post ]
        [
          input ~a:[ a_name "title" ] ();
          button ~a:[ a_button_type `Submit ] [ txt "Add" ];
        ];
      (* A file, not inline: TyXML escapes a script's text. *)
      script ~a:[ a_src "/app.js" ] (txt "");
    ]

(* Appends each element the server pushes: the server printed and escaped
   it, so it is inserted as HTML. *)
let app_js =
  {|const items = document.getElementById("items");
const scheme = location.protocol === "https:" ? "wss://" : "ws://";
const updates = new WebSocket(scheme + location.host + "/updates");
updates.onmessage = (event) => items.insertAdjacentHTML("beforeend", event.data);
|}

(* {1 Sessions} *)

let session_cookie = "session"

let current_user state r =
  Cookie.get r session_cookie
  |> Result.map (fun token ->
         Option.bind token (fun token ->
             locked state (fun () -> Hashtbl.find_opt state.sessions token)))

let with_user state r f =
  let* user = current_user state r in
  match user with
  | Some user -> f user
  | None -> Response.redirect ~status:303 "/login"

let start_session state user =
  let token = Token.generate () in
  locked state (fun () -> Hashtbl.replace state.sessions token user);
  Response.redirect ~status:303 "/"
  |> Cookie.set ~path:"/" ~http_only:true ~same_site:Lax session_cookie token

let credentials r =
  Result.bind (Form.urlencoded r) (fun form ->
      match
        (List.assoc_opt "username" form, List.assoc_opt "password" form)
      with
      | Some user, Some password when user <> "" && password <> "" ->
          Ok (user, password)
      | _ ->
          Error (Response.error 400 "a user name and a password are required"))

let sign_up state r =
  let* user, password = credentials r in
  let added =
    locked state (fun () ->
        if Hashtbl.mem state.passwords user then false
        else (
          Hashtbl.replace state.passwords user password;
          true))
  in
  if added then start_session state user
  else Response.error 409 "that user name is taken"

let log_in state r =
  let* user, password = credentials r in
  let known = locked state (fun () -> Hashtbl.find_opt state.passwords user) in
  match known with
  | Some expected when Token.equal expected password -> start_session state user
  | _ -> Response.error 403 "wrong user name or password"

(* {1 Items and their updates} *)

let titles state user =
  locked state (fun () ->
      Option.value (Hashtbl.find_opt state.items user) ~default:[])

(* Posts to every open page of [user] without waiting: a page whose outbox
   is full is not reading, and misses the update (it has the list when it
   reloads). *)
let push state user html =
  let pages =
    locked state (fun () ->
        List.filter_map
          (fun (owner, s) -> if owner = user then Some s else None)
          state.subscribers)
  in
  List.iter
    (fun s ->
      try ignore (Channel.try_send s.outbox html) with Channel.Closed -> ())
    pages

let add_item state r =
  with_user state r (fun user ->
      let* form = Form.urlencoded r in
      match List.assoc_opt "title" form with
      | Some title when String.trim title <> "" ->
          locked state (fun () ->
              let earlier =
                Option.value (Hashtbl.find_opt state.items user) ~default:[]
              in
              Hashtbl.replace state.items user (title :: earlier));
          push state user (Braid_tyxml.string_of_elt (item_element title));
          Response.redirect ~status:303 "/"
      | _ -> Response.error 400 "a title is required")

(* The connection's fiber sends what [push] posts; a second fiber reads
   until the page goes away, then closes the outbox, which ends the first. *)
let updates state r =
  with_user state r (fun user ->
      Websocket.accept r (fun ws ->
          let outbox = Channel.create 64 in
          let id =
            locked state (fun () ->
                let id = state.next_subscriber in
                state.next_subscriber <- id + 1;
                state.subscribers <- (user, { id; outbox }) :: state.subscribers;
                id)
          in
          let unsubscribe () =
            locked state (fun () ->
                state.subscribers <-
                  List.filter (fun (_, s) -> s.id <> id) state.subscribers);
            Channel.close outbox
          in
          Fun.protect ~finally:unsubscribe (fun () ->
              Braid.Switch.run (fun sw ->
                  let rec until_closed () =
                    match Websocket.receive ws with
                    | `Close _ -> Channel.close outbox
                    | `Text _ | `Binary _ -> until_closed ()
                  in
                  ignore (Braid.Switch.fork sw until_closed);
                  let rec send () =
                    match Channel.recv outbox with
                    | html ->
                        Websocket.send_text ws html;
                        send ()
                    | exception Channel.Closed -> ()
                  in
                  try send () with Websocket.Closed -> ()))))

let router state =
  Router.empty
  |> Router.get "/" (fun r ->
         with_user state r (fun user -> home_page ~user (titles state user)))
  |> Router.get "/signup" (fun _ ->
         credentials_page ~heading:"Sign up" ~action:"/signup"
           ~button_id:"signup")
  |> Router.post "/signup" (sign_up state)
  |> Router.get "/login" (fun _ ->
         credentials_page ~heading:"Log in" ~action:"/login" ~button_id:"login")
  |> Router.post "/login" (log_in state)
  |> Router.post "/items" (add_item state)
  |> Router.get "/updates" (updates state)
  |> Router.get "/app.js" (fun _ ->
         Response.string ~content_type:"text/javascript; charset=utf-8" app_js)

let () =
  let port = ref 0 and data = ref "" in
  Arg.parse
    [
      ("--port", Arg.Set_int port, "PORT the TCP port on 127.0.0.1");
      ("--data", Arg.Set_string data, "DIR an existing data directory");
    ]
    (fun extra -> raise (Arg.Bad ("unexpected argument " ^ extra)))
    "stand_in.exe --port N --data DIR";
  if not (Sys.file_exists !data && Sys.is_directory !data) then (
    prerr_endline "stand_in: --data must name an existing directory";
    exit 2);
  let config =
    {
      Braid_server.Config.default with
      listen = Braid_io.Net.tcp "127.0.0.1" !port;
    }
  in
  match
    Braid_server.Server.serve ~config ~shutdown_timeout:2. (router (create ()))
  with
  | Ok () -> ()
  | Error msg ->
      prerr_endline ("stand_in: " ^ msg);
      exit 1
