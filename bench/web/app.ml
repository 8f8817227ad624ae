open Braid_web
open Braid_server

let hello = "Hello, World!"
let plaintext _ = Response.string ~content_type:"text/plain" hello
let json _ = Json.response (`Assoc [ ("message", `String hello) ])

let server_header : Router.middleware =
 fun handler request -> Response.with_header "Server" "braid" (handler request)

let routes database =
  Router.empty
  |> Router.get "/plaintext" plaintext
  |> Router.get "/json" json
  |> Braid_db_routes.add database
  |> Router.use server_header

let serve ~port database =
  Random.self_init ();
  let settings = Real_services.settings (routes database) in
  let config =
    { Config.default with listen = Braid_io.Net.tcp "127.0.0.1" port }
  in
  match Server.create ~settings config with
  | Ok server -> Server.run server
  | Error msg -> failwith msg
