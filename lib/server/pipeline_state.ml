open Braid_web
open Braid_web.Private

type t = {
  config : Config.t;
  head_limits : Braid_http.Limits.t;
  dates : Head_cache.t;
  peer : Unix.sockaddr option;
  secure : bool;
  input : Braid_http.Input.t;
  out : Output.t;
  progress : Progress.t;
  services : Services.t;
  await_input : (unit -> unit) option;
  alpn : unit -> string option;
  file_sender : (unit -> Output.file_sender) option;
  mutable body : Body.t;
  mutable ending : Handler.Ending.t;
  mutable head_written : bool;
  mutable abandon_body : bool;
  mutable closed_as_asked : bool;
  upgraded_read : bytes -> int -> int -> int;
  upgraded_write : bytes -> int -> int -> unit;
}

let log_error c text =
  c.services.log (Message { time = c.services.now (); level = Error; text })
