open Braid_web
open Braid_server

let hello = "Hello, World!"
let plaintext _ = Response.string ~content_type:"text/plain" hello
let json _ = Json.response (`Assoc [ ("message", `String hello) ])

let server_header : Router.middleware =
 fun handler request -> Response.with_header "Server" "braid" (handler request)

let routes pool =
  Router.empty
  |> Router.get "/plaintext" plaintext
  |> Router.get "/json" json |> Braid_db_routes.add pool
  |> Router.use server_header

(* The pool is opened in [background], a fiber of the server's first loop,
   forked before it listens, and handed to the handlers through [pool]; its
   switch stays open until [background] is cancelled, after the last
   connection. This is right because the server runs one loop
   ([Config.default.domains = 1]): with several, handlers on the other
   loops would use this loop's pool, which braid_db forbids (one pool per
   loop is needed, or a pool usable across loops). *)
let serve ~port database =
  Random.self_init ();
  let pool = Braid_sync.Promise.create () in
  let background () =
    Braid.Switch.run @@ fun sw ->
    Braid_sync.Promise.fill pool (Braid_db_routes.open_pool ~sw database);
    (* Until cancelled. *)
    Braid_sync.Promise.await (Braid_sync.Promise.create ())
  in
  let settings = Real_services.settings (routes pool) in
  let config =
    { Config.default with listen = Braid_io.Net.tcp "127.0.0.1" port }
  in
  assert (config.domains = 1);
  match Server.create ~settings config with
  | Ok server -> Server.run ~background server
  | Error msg -> failwith msg
