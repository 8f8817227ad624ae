open Braid_io
module Promise = Braid_sync.Promise

type t = {
  domains : int;
  mode : Connection.mode;
  settings : Production.settings;
  config : Config.t Atomic.t;
  address : Unix.sockaddr;
  stopped : unit Promise.t;
}

let check_config (c : Config.t) =
  let positive name n =
    if n > 0 then Ok () else Error (Printf.sprintf "%s must be positive" name)
  in
  let ( let* ) = Result.bind in
  let* () = positive "input buffer size" c.input_buffer in
  let* () = positive "output buffer size" c.output_buffer in
  let* () = positive "maximum request line" c.limits.max_request_line in
  let* () = positive "maximum header size" c.limits.max_header_bytes in
  let* () = positive "maximum header fields" c.limits.max_header_fields in
  let* () =
    if c.limits.max_body >= 0 then Ok ()
    else Error "maximum body size must not be negative"
  in
  let* () =
    if c.index <> "" && not (String.contains c.index '/') then Ok ()
    else Error "the index file must be a plain file name"
  in
  match c.root with
  | None -> Ok c
  | Some root -> (
      match Unix.realpath root with
      | exception Unix.Unix_error (e, _, _) ->
          Error (Printf.sprintf "root %s: %s" root (Unix.error_message e))
      | real -> (
          match (Unix.stat real).st_kind with
          | S_DIR -> Ok { c with root = Some real }
          | _ -> Error (Printf.sprintf "root %s is not a directory" root)
          | exception Unix.Unix_error (e, _, _) ->
              Error (Printf.sprintf "root %s: %s" root (Unix.error_message e))))

let create ?(domains = 1) ?(mode = Connection.Effects) ~settings ~config address
    =
  if domains < 1 then Error "the number of domains must be at least 1"
  else
    Result.map
      (fun config ->
        {
          domains;
          mode;
          settings;
          config = Atomic.make config;
          address;
          stopped = Promise.create ();
        })
      (check_config config)

let config t = Atomic.get t.config

let set_config t c =
  Result.map (fun c -> Atomic.set t.config c) (check_config c)

let stop t = ignore (Promise.try_fill t.stopped (Ok ()))

let log_error production text =
  Production.log production (Message { level = Error; text })

(* Running out of descriptors leaves the connection in the kernel's
   backlog: pause instead of spinning on it. *)
let rec accept_loop t ~sw listener context =
  (match
     Net.accept_fork ~sw listener
       ~on_error:(fun e ->
         log_error
           (Connection.production context)
           ("connection failed: " ^ Printexc.to_string e))
       (fun socket peer ->
         Connection.serve context (Atomic.get t.config) socket peer)
   with
  | () -> ()
  | exception
      Net.Error { error = (EMFILE | ENFILE | ENOBUFS | ENOMEM) as error; _ } ->
      log_error
        (Connection.production context)
        ("accept: " ^ Unix.error_message error ^ "; pausing");
      Time.sleep 0.05
  | exception Net.Error { error = ECONNABORTED | EPERM | EUNKNOWNERR _; _ } ->
      ());
  accept_loop t ~sw listener context

let with_port address port =
  match address with
  | Unix.ADDR_INET (ip, _) -> Unix.ADDR_INET (ip, port)
  | Unix.ADDR_UNIX _ -> address

let port_of = function Unix.ADDR_INET (_, p) -> p | Unix.ADDR_UNIX _ -> 0

let serve_domain t ~domain ~port ~on_listen =
  let production = Production.create t.settings in
  let context = Connection.context t.mode production in
  match
    Switch.run (fun sw ->
        (* With port 0, the first loop binds and tells the others the port. *)
        let address =
          if domain = 0 then t.address
          else with_port t.address (Promise.await port)
        in
        let listener = Net.listen ~sw ~reuse_port:(t.domains > 1) address in
        if domain = 0 then (
          let bound = Net.local_addr listener in
          Promise.fill port (port_of bound);
          on_listen bound);
        ignore (Fiber.fork ~sw (fun () -> accept_loop t ~sw listener context));
        Promise.await t.stopped;
        Switch.cancel sw)
  with
  | () -> ()
  | exception Braid.Cancelled when Promise.peek t.stopped <> None -> ()

let run ?(on_listen = ignore) t =
  let port = Promise.create () in
  ignore
    (Braid_io.run_domains ~domains:t.domains (fun ~domain ->
         serve_domain t ~domain ~port ~on_listen))
