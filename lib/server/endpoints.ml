open Braid_web

type figures = {
  connections_open : unit -> int;
  connections_idle : unit -> int;
  draining : bool Atomic.t;
  spool : Spool_budget.t;
}

type t = {
  config : Config.t Atomic.t;
  metrics : Metrics.t option;
  figures : figures;
}

let create ~config ~metrics figures = { config; metrics; figures }

(* The peer is already unmapped (the accept loop); the allow list may name
   either form. *)
let allowed (config : Config.t) (request : Handler.request) =
  match request.peer with
  | None -> true
  | Some peer when config.metrics_allow = [] -> Address.is_loopback peer
  | Some (ADDR_INET (ip, _)) ->
      List.exists
        (fun allowed -> Address.unmapped_inet allowed = ip)
        config.metrics_allow
  | Some (ADDR_UNIX _) -> true

let metrics_handler t metrics (request : Handler.request) =
  if not (allowed (Atomic.get t.config) request) then
    Response.error 403 "metrics: not from this address"
  else
    let fibers =
      try (Braid_io.stats ()).fibers with Invalid_argument _ -> 0
    in
    let gauges =
      [
        Metrics.gauge "connections_open" "Connections open, over all loops."
          (float (t.figures.connections_open ()));
        Metrics.gauge "connections_idle"
          "Connections waiting for a request, as of each loop's last sweep (at \
           most a second old)."
          (float (t.figures.connections_idle ()));
        Metrics.gauge "draining" "1 once the server shuts down."
          (if Atomic.get t.figures.draining then 1. else 0.);
        Metrics.gauge "loop_fibers"
          "Fibers of the loop that answered this scrape." (float fibers);
      ]
      @ Spool_limit.gauges t.figures.spool
      @ Metrics.process_gauges ()
    in
    Response.string ~content_type:"text/plain; version=0.0.4; charset=utf-8"
      (Metrics.render metrics gauges)

let health_handler t (_ : Handler.request) =
  if Atomic.get t.figures.draining then Response.error 503 "draining"
  else Response.string "ok\n"

(* A route of exactly one path, with no body: a GET of the metrics carries
   none, and the parser's limit must not let one through. *)
let found handler =
  Router.Found { handler; params = []; tail = None; max_body = Some 0 }

let reading = function
  | Braid_http.Method.GET | Braid_http.Method.HEAD -> true
  | _ -> false

(* Compared as sent (not decoded), as they always were: a plain Router route
   would also answer the percent-encoded spellings of the path, and [405]
   to its other methods where the application's routes answer today. *)
let find t meth path =
  if not (reading meth) then None
  else
    let config = Atomic.get t.config in
    match (config.metrics_path, config.health_path, t.metrics) with
    | Some p, _, Some metrics when String.equal p path ->
        Some (found (metrics_handler t metrics))
    | _, Some p, _ when String.equal p path -> Some (found (health_handler t))
    | _ -> None

let in_front t routes meth path =
  match find t meth path with Some found -> found | None -> routes meth path
