type t = {
  config : Config.t;
  dates : Date_cache.t;
  peer : Unix.sockaddr option;
  input : Braid_http.Input.t;
  out : Output.t;
  control : Control.t;
  fixed_services : Services.t option;
  mutable services : Services.t;
  mutable head_written : bool;
  mutable abandon_body : bool;
}

let refresh_services c =
  match c.fixed_services with
  | Some _ -> ()
  | None ->
      let s = Services.current () in
      (* A write barrier only when the services change. *)
      if s != c.services then c.services <- s

let log_error c text =
  c.services.log (Message { time = c.services.now (); level = Error; text })
