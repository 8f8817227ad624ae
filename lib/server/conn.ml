open Braid_web
open Braid_web.Private

type file_sender = {
  write_more : bytes -> int -> int -> unit;
  send_file : Unix.file_descr -> off:int -> len:int -> int;
}

exception Cannot_send_file

type t = {
  config : Config.t;
  head_limits : Braid_http.Limits.t;
  dates : Head_cache.t;
  peer : Unix.sockaddr option;
  input : Braid_http.Input.t;
  out : Output.t;
  control : Control.t;
  services : Services.t;
  await_input : (unit -> unit) option;
  file_sender : (unit -> file_sender) option;
  mutable body : Body.t;
  mutable head_written : bool;
  mutable abandon_body : bool;
  upgraded_read : bytes -> int -> int -> int;
  upgraded_write : bytes -> int -> int -> unit;
}

let log_error c text =
  c.services.log (Message { time = c.services.now (); level = Error; text })
