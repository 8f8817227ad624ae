type t = {
  log : Log_event.event -> unit;
  now : unit -> float;
  monotonic_ns : unit -> int;
  sleep : float -> unit;
  timeout : 'a. float -> (unit -> 'a) -> 'a option;
  stat : follow:bool -> string -> (File.info, File.error) result;
  realpath : string -> (string, File.error) result;
  open_file : string -> File.info -> (File.contents, File.error) result;
  find_handler : Braid_http.Method.t -> string -> Router.found;
  middleware : Handler.t -> Handler.t;
  error_page : Braid_http.Request.t option -> Response.t -> Response.t;
  largest_max_body : int option;
  spool : Spool_budget.t;
}

(* One effect for every service: its answer is the record, and the caller
   calls the service itself. So a service runs in the caller's fiber (it may
   block it, or take a callback, as [timeout] does), and the effect carries
   no argument: performing it allocates nothing but the continuation. *)
type _ Effect.t += Current : t Effect.t

let install (type r) services (f : unit -> r) : r =
  (* Built once per [install]: answering allocates nothing. *)
  let answer (k : (t, r) Effect.Deep.continuation) =
    Effect.Deep.continue k services
  in
  let some_answer = Some answer in
  Effect.Deep.try_with f ()
    {
      effc =
        (fun (type b) (e : b Effect.t) ->
          match e with
          | Current ->
              (some_answer : ((b, r) Effect.Deep.continuation -> r) option)
          | _ -> None);
    }

let run services f =
  Braid.Fiber.with_handler { run = (fun f -> install services f) } f

let current () =
  try Effect.perform Current
  with Effect.Unhandled Current ->
    invalid_arg
      "Braid_web.Services: no services here (call it inside Services.run, as a \
       server's connections and their fibers are)"

let log e = (current ()).log e
let now () = (current ()).now ()
let monotonic_ns () = (current ()).monotonic_ns ()
let sleep seconds = (current ()).sleep seconds
let timeout seconds f = (current ()).timeout seconds f
let stat ~follow path = (current ()).stat ~follow path
let realpath path = (current ()).realpath path
let open_file path info = (current ()).open_file path info
let find_handler meth path = (current ()).find_handler meth path
