type _ Effect.t +=
  | Log : Log.event -> unit Effect.t
  | Now : float Effect.t
  | Stat : {
      follow : bool;
      path : string;
    }
      -> (File.info, File.error) result Effect.t
  | Realpath : string -> (string, File.error) result Effect.t
  | Open_file :
      string * File.info
      -> (File.contents, File.error) result Effect.t
  | Find_handler : Braid_http.Method.t * string -> Router.found Effect.t

let run (type a) (services : Capabilities.t) (f : unit -> a) : a =
  let open Effect.Deep in
  (* [answer] resumes the performer with the service's result, or raises the
     service's exception at the perform. *)
  let answer : type r a. (unit -> r) -> ((r, a) continuation -> a) option =
   fun call ->
    Some
      (fun k ->
        match call () with
        | v -> continue k v
        | exception e ->
            discontinue_with_backtrace k e (Printexc.get_raw_backtrace ()))
  in
  try_with f ()
    {
      effc =
        (fun (type b) (e : b Effect.t) : ((b, a) continuation -> a) option ->
          match e with
          | Log event -> answer (fun () -> services.log event)
          | Now -> answer services.now
          | Stat { follow; path } ->
              answer (fun () -> services.stat ~follow path)
          | Realpath path -> answer (fun () -> services.realpath path)
          | Open_file (path, info) ->
              answer (fun () -> services.open_file path info)
          | Find_handler (meth, path) ->
              answer (fun () -> services.find_handler meth path)
          | _ -> None);
    }

module Perform = struct
  type env = unit

  let log () event = Effect.perform (Log event)
  let now () = Effect.perform Now
  let stat () ~follow path = Effect.perform (Stat { follow; path })
  let realpath () path = Effect.perform (Realpath path)
  let open_file () path info = Effect.perform (Open_file (path, info))
  let find_handler () meth path = Effect.perform (Find_handler (meth, path))
end
