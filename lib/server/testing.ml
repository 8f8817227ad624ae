open Braid_web
open Braid_web.Private

type response = {
  status : int;
  headers : (string * string) list;
  body : string;
}

let headers r name =
  List.filter_map
    (fun (n, v) ->
      if Braid_http.Headers.equal_name n name then Some v else None)
    r.headers

let header r name = match headers r name with v :: _ -> Some v | [] -> None

let request_bytes ?(close = true) ~meth ~headers ~body target =
  let b = Buffer.create 256 in
  Printf.bprintf b "%s %s HTTP/1.1\r\n"
    (Braid_http.Method.to_string meth)
    target;
  let has name =
    List.exists (fun (n, _) -> Braid_http.Headers.equal_name n name) headers
  in
  if not (has "host") then Buffer.add_string b "Host: test\r\n";
  List.iter (fun (n, v) -> Printf.bprintf b "%s: %s\r\n" n v) headers;
  (match body with
  | Some s when not (has "content-length" || has "transfer-encoding") ->
      Printf.bprintf b "Content-Length: %d\r\n" (String.length s)
  | _ -> ());
  if close then Buffer.add_string b "Connection: close\r\n";
  Buffer.add_string b "\r\n";
  Option.iter (Buffer.add_string b) body;
  Buffer.contents b

(* [find s sub from]: the first index of [sub] in [s] at or after [from]. *)
let find s sub from =
  let n = String.length s and m = String.length sub in
  let rec go i =
    if i + m > n then None
    else if String.sub s i m = sub then Some i
    else go (i + 1)
  in
  go from

let fail fmt = Printf.ksprintf failwith ("Braid_server.Testing.call: " ^^ fmt)

(* The server's own framing: a head, then a length, chunks, or the rest. *)
let parse ~head_only s =
  match find s "\r\n\r\n" 0 with
  | None -> fail "no complete head in %S" s
  | Some h -> (
      let lines = String.split_on_char '\n' (String.sub s 0 h) in
      let lines = List.map (fun l -> String.trim l) lines in
      let status =
        match lines with
        | l :: _ -> (
            match String.split_on_char ' ' l with
            | _ :: code :: _ -> int_of_string code
            | _ -> fail "bad status line %S" l)
        | [] -> fail "empty head"
      in
      let headers =
        List.filter_map
          (fun l ->
            match String.index_opt l ':' with
            | Some i ->
                Some
                  ( String.sub l 0 i,
                    String.trim (String.sub l (i + 1) (String.length l - i - 1))
                  )
            | None -> None)
          (List.tl lines)
      in
      let r = { status; headers; body = "" } in
      let rest = String.sub s (h + 4) (String.length s - h - 4) in
      if head_only || status = 204 || status = 304 then r
      else if header r "transfer-encoding" = Some "chunked" then (
        let b = Buffer.create (String.length rest) in
        let rec chunks pos =
          match find rest "\r\n" pos with
          | None -> fail "truncated chunked body"
          | Some e ->
              let size =
                int_of_string
                  ("0x" ^ String.trim (String.sub rest pos (e - pos)))
              in
              if size > 0 then (
                Buffer.add_string b (String.sub rest (e + 2) size);
                chunks (e + 2 + size + 2))
        in
        chunks 0;
        { r with body = Buffer.contents b })
      else
        match header r "content-length" with
        | Some n ->
            let n = int_of_string n in
            if String.length rest < n then fail "truncated body";
            { r with body = String.sub rest 0 n }
        | None -> { r with body = rest })

type files = [ `Memory | `Disk ]

(* In_memory's services (clock, log, spool budget), the router as handler
   store, and with [`Disk] the real file system's calls in place of the
   memory's: what Braid_io.File writes, the static files then serve. *)
let services_for ~memory ~(files : files) router : Services.t =
  let base = In_memory.services memory in
  let base =
    match files with
    | `Memory -> base
    | `Disk ->
        let real =
          Real_services.services
            (Real_services.create
               (Real_services.settings ~file_cache:None router))
        in
        {
          base with
          stat = real.stat;
          realpath = real.realpath;
          open_file = real.open_file;
        }
  in
  {
    base with
    find_handler = Router.lookup router;
    middleware = Router.wrap router;
    error_page = Router.render_error router;
    largest_max_body = Router.largest_max_body router;
  }

let memory_for router = function
  | Some m -> m
  | None -> In_memory.create ~router ()

let serve_connection ~config ~services transport =
  ignore
    (Services.run services (fun () ->
         Pipeline.serve
           (Pipeline.create
              (Pipeline.standalone config (Head_cache.create ()))
              transport services))
      : Pipeline.outcome)

let call ?(meth = Braid_http.Method.GET) ?(headers = []) ?body
    ?(config = Config.default) ?memory ?(files = `Memory) router target =
  let memory = memory_for router memory in
  let input = ref (request_bytes ~meth ~headers ~body target) in
  let read buf off len =
    let n = min len (String.length !input) in
    Bytes.blit_string !input 0 buf off n;
    input := String.sub !input n (String.length !input - n);
    n
  in
  let out = Buffer.create 1024 in
  let write buf off len = Buffer.add_subbytes out buf off len in
  let transport : Pipeline.transport =
    {
      peer = None;
      read;
      write;
      await_input = None;
      file_sender = None;
      alpn = (fun () -> None);
    }
  in
  serve_connection ~config
    ~services:(services_for ~memory ~files router)
    transport;
  parse ~head_only:(meth = HEAD) (Buffer.contents out)

let is_redirect status = List.mem status [ 301; 302; 303 ]

module Client = struct
  type t = {
    router : Router.t;
    config : Config.t;
    memory : In_memory.t;
    files : files;
    https : bool;
    host : string;
    jar : Cookie_jar.t Atomic.t;
    csrf : string option Atomic.t;
        (** From the last HTML response: what a browser's next form holds. *)
  }

  let create ?(config = Config.default) ?memory ?(files = `Memory)
      ?(https = true) ?(host = "test") router =
    {
      router;
      config;
      memory = memory_for router memory;
      files;
      https;
      host;
      jar = Atomic.make Cookie_jar.empty;
      csrf = Atomic.make None;
    }

  let memory t = t.memory
  let origin t = (if t.https then "https://" else "http://") ^ t.host
  let now t = (In_memory.services t.memory).now ()

  let rec update jar f =
    let old = Atomic.get jar in
    if not (Atomic.compare_and_set jar old (f old)) then update jar f

  let path_of target =
    match String.index_opt target '?' with
    | Some i -> String.sub target 0 i
    | None -> target

  let has headers name =
    List.exists (fun (n, _) -> Braid_http.Headers.equal_name n name) headers

  (* What a browser adds to a request of its own: the host, the cookies, and
     for a method that may change state, the origin of the page sending it. *)
  let browser_fields t ~meth ~headers target =
    let add name value headers =
      if has headers name then headers else headers @ [ (name, value) ]
    in
    let headers = add "Host" t.host headers in
    let headers =
      match
        Cookie_jar.header (Atomic.get t.jar) ~now:(now t) ~https:t.https
          ~path:(path_of target)
      with
      | Some cookies -> add "Cookie" cookies headers
      | None -> headers
    in
    match (meth : Braid_http.Method.t) with
    | GET | HEAD | OPTIONS -> headers
    | _ -> add "Origin" (origin t) headers

  let absorb t target (r : response) =
    let now = now t in
    List.iter
      (fun field ->
        update t.jar (fun jar ->
            Cookie_jar.receive jar ~now ~https:t.https ~host:t.host
              ~path:(path_of target) field))
      (headers r "set-cookie");
    match header r "content-type" with
    | Some ct
      when String.length ct >= 9
           && String.lowercase_ascii (String.sub ct 0 9) = "text/html" ->
        Atomic.set t.csrf (Html_scan.csrf_token r.body)
    | _ -> ()

  let call t ?(meth = Braid_http.Method.GET) ?(headers = []) ?body target =
    let headers = browser_fields t ~meth ~headers target in
    let r =
      call ~meth ~headers ?body ~config:t.config ~memory:t.memory ~files:t.files
        t.router target
    in
    absorb t target r;
    r

  let get t ?headers target = call t ?headers target

  let post t ?(headers = []) ?content_type ?(body = "") target =
    let headers =
      match content_type with
      | Some ct -> headers @ [ ("Content-Type", ct) ]
      | None -> headers
    in
    call t ~meth:POST ~headers ~body target

  let csrf_token t = Atomic.get t.csrf

  let post_form t ?headers target fields =
    let fields =
      match Atomic.get t.csrf with
      | Some token when not (List.mem_assoc "csrf_token" fields) ->
          fields @ [ ("csrf_token", token) ]
      | _ -> fields
    in
    post t ?headers ~content_type:"application/x-www-form-urlencoded"
      ~body:(Query.encode fields) target

  (* A Location of this client's origin, as a target; another origin's is
     not followed. *)
  let local_target t location =
    let o = origin t in
    let n = String.length o in
    if String.length location > 0 && location.[0] = '/' then Some location
    else if
      String.length location > n
      && String.sub location 0 n = o
      && location.[n] = '/'
    then Some (String.sub location n (String.length location - n))
    else None

  let follow t (r : response) =
    let rec go hops (r : response) =
      match header r "location" with
      | Some location when is_redirect r.status && hops < 10 -> (
          match local_target t location with
          | Some target -> go (hops + 1) (get t target)
          | None -> r)
      | _ -> r
    in
    go 0 r

  let cookie t name =
    List.find_map
      (fun (c : Cookie_jar.cookie) ->
        if c.name = name then Some c.value else None)
      (List.rev (Cookie_jar.cookies (Atomic.get t.jar) ~now:(now t)))

  let cookies t =
    List.map
      (fun (c : Cookie_jar.cookie) -> (c.name, c.value))
      (Cookie_jar.cookies (Atomic.get t.jar) ~now:(now t))

  let set_cookie t ?(path = "/") name value =
    update t.jar (fun jar ->
        Cookie_jar.set jar
          {
            name;
            value;
            path;
            expires = None;
            secure = false;
            http_only = false;
          })

  let remove_cookie t name =
    update t.jar (fun jar -> Cookie_jar.remove jar ~name)
end

(* One direction of an in-memory connection: byte strings through a channel,
   so the reader's fiber waits as on a socket. One reader. *)
module Pipe = struct
  type t = { chunks : string Braid_sync.Channel.t; mutable rest : string }

  let create () = { chunks = Braid_sync.Channel.create 64; rest = "" }

  let write t s =
    if s <> "" then
      try Braid_sync.Channel.send t.chunks s
      with Braid_sync.Channel.Closed -> failwith "connection closed"

  let read t buf off len =
    if t.rest = "" then
      t.rest <-
        (try Braid_sync.Channel.recv t.chunks
         with Braid_sync.Channel.Closed -> "");
    let n = min len (String.length t.rest) in
    Bytes.blit_string t.rest 0 buf off n;
    t.rest <- String.sub t.rest n (String.length t.rest - n);
    n

  (* The end of the stream, once what was written is read. *)
  let close t = Braid_sync.Channel.close t.chunks
end

module Websocket_client = struct
  module Frame = Braid_http.Websocket_codec.Frame

  type t = {
    to_server : Pipe.t;
    from_server : Pipe.t;
    mutable inbox : string;  (** Read from the server, not yet parsed. *)
    random : Random.State.t;  (** Masking keys. *)
    mutable close_sent : bool;
    mutable close_received : (int * string) option;
  }

  type message = [ `Text of string | `Binary of string | `Close of int * string ]

  let fill t =
    let buf = Bytes.create 4096 in
    let n = Pipe.read t.from_server buf 0 4096 in
    t.inbox <- t.inbox ^ Bytes.sub_string buf 0 n;
    n > 0

  (* The next whole frame, or None at the end of the stream. *)
  let rec next_frame t =
    match
      Frame.parse_header
        (Bytes.unsafe_of_string t.inbox)
        0 (String.length t.inbox)
    with
    | Invalid why -> failwith ("Testing.Websocket_client: " ^ why)
    | Need_more -> if fill t then next_frame t else None
    | Header (h, size) ->
        if String.length t.inbox < size + h.length then
          if fill t then next_frame t else None
        else (
          if h.mask <> None then
            failwith "Testing.Websocket_client: a masked server frame";
          let payload = String.sub t.inbox size h.length in
          t.inbox <-
            String.sub t.inbox (size + h.length)
              (String.length t.inbox - size - h.length);
          Some (h, payload))

  let send_frame t opcode payload =
    if t.close_sent then
      invalid_arg "Testing.Websocket_client: the connection is closed";
    let mask =
      String.init 4 (fun _ -> Char.chr (Random.State.int t.random 256))
    in
    Pipe.write t.to_server (Frame.serialize ~mask opcode payload)

  let send_text t s = send_frame t Text s
  let send_binary t s = send_frame t Binary s

  let close_payload code reason =
    if code = 1005 then ""
    else
      let b = Bytes.create 2 in
      Bytes.set_uint16_be b 0 code;
      Bytes.to_string b ^ reason

  let send_close t code reason =
    if not t.close_sent then (
      send_frame t Close (close_payload code reason);
      t.close_sent <- true)

  (* The closing handshake is over (or the stream ended): nothing more goes
     to the server, which sees the end of its input, as after a TCP close. *)
  let closed t code_reason =
    t.close_received <- Some code_reason;
    Pipe.close t.to_server;
    `Close code_reason

  let receive t : message =
    match t.close_received with
    | Some c -> `Close c
    | None ->
        let rec loop fragments =
          match next_frame t with
          | None -> closed t (1006, "")
          | Some (h, payload) -> (
              match (h.opcode, fragments) with
              | (Text | Binary), None when h.fin ->
                  if h.opcode = Text then `Text payload else `Binary payload
              | (Text | Binary), None -> loop (Some (h.opcode, [ payload ]))
              | Continuation, Some (op, parts) ->
                  let parts = payload :: parts in
                  if h.fin then
                    let whole = String.concat "" (List.rev parts) in
                    if op = Frame.Text then `Text whole else `Binary whole
                  else loop (Some (op, parts))
              | Ping, _ ->
                  if not t.close_sent then send_frame t Pong payload;
                  loop fragments
              | Pong, _ -> loop fragments
              | Close, _ ->
                  let code, reason =
                    if String.length payload >= 2 then
                      ( String.get_uint16_be payload 0,
                        String.sub payload 2 (String.length payload - 2) )
                    else (1005, "")
                  in
                  send_close t code reason;
                  closed t (code, reason)
              | _ ->
                  failwith
                    "Testing.Websocket_client: a frame out of sequence from \
                     the server")
        in
        loop None

  let close ?(code = 1000) ?(reason = "") t =
    send_close t code reason;
    let rec drain () =
      match receive t with `Close c -> c | `Text _ | `Binary _ -> drain ()
    in
    drain ()

  let test_key = "dGhlIHNhbXBsZSBub25jZQ=="

  let connect ?(headers = []) (client : Client.t) target f =
    let to_server = Pipe.create () and from_server = Pipe.create () in
    let transport : Pipeline.transport =
      {
        peer = None;
        read = Pipe.read to_server;
        write =
          (fun b off len -> Pipe.write from_server (Bytes.sub_string b off len));
        await_input = None;
        file_sender = None;
        alpn = (fun () -> None);
      }
    in
    let services =
      services_for ~memory:client.memory ~files:client.files client.router
    in
    let headers =
      let add name value headers =
        if Client.has headers name then headers else headers @ [ (name, value) ]
      in
      Client.browser_fields client ~meth:GET ~headers target
      |> add "Upgrade" "websocket" |> add "Connection" "Upgrade"
      |> add "Sec-WebSocket-Key" test_key
      |> add "Sec-WebSocket-Version" "13"
      |> add "Origin" (Client.origin client)
    in
    Braid.Switch.run @@ fun sw ->
    ignore
      (Braid.Switch.fork sw (fun () ->
           Fun.protect
             ~finally:(fun () -> Pipe.close from_server)
             (fun () ->
               serve_connection ~config:client.config ~services transport)));
    Pipe.write to_server
      (request_bytes ~close:false ~meth:GET ~headers ~body:None target);
    let t =
      {
        to_server;
        from_server;
        inbox = "";
        random = Random.State.make_self_init ();
        close_sent = false;
        close_received = None;
      }
    in
    let rec head () =
      match find t.inbox "\r\n\r\n" 0 with
      | Some h -> Some h
      | None -> if fill t then head () else None
    in
    match head () with
    | Some h when String.length t.inbox > 9 && String.sub t.inbox 9 3 = "101"
      -> (
        let r = parse ~head_only:true (String.sub t.inbox 0 (h + 4)) in
        t.inbox <- String.sub t.inbox (h + 4) (String.length t.inbox - h - 4);
        Client.absorb client target r;
        if
          header r "sec-websocket-accept"
          <> Some (Braid_http.Websocket_codec.accept_key test_key)
        then
          failwith
            "Testing.Websocket_client: a 101 without the right \
             Sec-WebSocket-Accept";
        match f t with
        | v ->
            (* A browser closing the page: going away. *)
            if t.close_received = None then
              ignore (close ~code:1001 t : int * string);
            Ok v
        | exception e ->
            Pipe.close to_server;
            raise e)
    | _ ->
        (* Refused: the server answered and waits for another request. *)
        Pipe.close to_server;
        while fill t do
          ()
        done;
        let r = parse ~head_only:false t.inbox in
        Client.absorb client target r;
        Error r
end
