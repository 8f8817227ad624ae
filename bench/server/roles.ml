open Braid_server
open Braid_web

let variable = "BRAID_BENCH_ROLE"

(* Words allocated by this process so far: its one domain runs the loop. *)
let gc_counters _ =
  let s = Gc.quick_stat () in
  Response.string
    (Printf.sprintf "%.0f %.0f %.0f\n" (Gc.minor_words ()) s.major_words
       s.promoted_words)

(* [direct]: the pipeline calls the production services directly instead
   of looking them up as an effect per request (the experiment's baseline). *)
let braid ~direct ~router ~root ~port =
  let settings = Real_services.settings router in
  let config =
    { Config.default with root; listen = Braid_io.Net.tcp "127.0.0.1" port }
  in
  let create =
    if direct then Braid_server.Private.Server.create_with_direct_calls
    else Server.create
  in
  match create ~settings config with
  | Ok server -> Server.run server
  | Error msg -> failwith msg

let static_routes = Router.empty |> Router.add GET "/debug/gc" gc_counters

let reverse_routes =
  Router.empty
  |> Router.add POST "/reverse" Braid_cli.Demo.reverse
  |> Router.add GET "/debug/gc" gc_counters

let dispatch () =
  match Sys.getenv_opt variable with
  | None -> ()
  | Some role ->
      let port () = int_of_string (Sys.getenv "BRAID_BENCH_PORT") in
      let root = Sys.getenv_opt "BRAID_BENCH_ROOT" in
      let serve =
        match role with
        | "braid-static" ->
            Some
              (fun () ->
                braid ~direct:false ~router:static_routes ~root ~port:(port ()))
        | "braid-static-direct" ->
            Some
              (fun () ->
                braid ~direct:true ~router:static_routes ~root ~port:(port ()))
        | "braid-reverse-effects" ->
            Some
              (fun () ->
                braid ~direct:false ~router:reverse_routes ~root:None
                  ~port:(port ()))
        | "braid-reverse-direct" ->
            Some
              (fun () ->
                braid ~direct:true ~router:reverse_routes ~root:None
                  ~port:(port ()))
        | "cohttp-static" ->
            Some
              (fun () ->
                Cohttp_static.run ~port:(port ()) ~root:(Option.get root))
        | _ -> None (* another experiment's role *)
      in
      Option.iter
        (fun serve ->
          serve ();
          exit 0)
        serve
