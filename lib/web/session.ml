type backend = {
  find : key:string -> now:float -> string option;
  save : key:string -> data:string -> expires:float -> now:float -> unit;
  delete : key:string -> unit;
}

type store = Server_side of backend | In_cookie of Encrypted.keys

let of_backend backend = Server_side backend
let cookie ~keys = In_cookie keys

(* {1 The memory store}

   One table for every domain, behind a mutex: each operation is a hash
   lookup or two (no effect, no I/O, nothing that suspends while the lock is
   held), so a domain waits at most that long. Expired sessions are swept
   while saving, once per [sweep_interval], so a table that nobody reads
   again does not keep them. *)

let memory ?(sweep_interval = 60.) ?(max_sessions = 100_000) () =
  if max_sessions < 1 then invalid_arg "Session.memory: max_sessions < 1";
  let table : (string, string * float) Hashtbl.t = Hashtbl.create 64 in
  let lock = Mutex.create () in
  let last_sweep = ref neg_infinity in
  let remove_expired now =
    last_sweep := now;
    Hashtbl.filter_map_inplace
      (fun _ ((_, expires) as entry) ->
        if expires > now then Some entry else None)
      table
  in
  (* At the cap (a flood of new visitors, each given a session by a CSRF tag):
     the tenth of the sessions that expire soonest go at once, so the sort is
     paid once per tenth of [max_sessions] new sessions, not per save. *)
  let make_room now =
    remove_expired now;
    if Hashtbl.length table >= max_sessions then
      let by_expiry =
        Hashtbl.fold
          (fun key (_, expires) acc -> (expires, key) :: acc)
          table []
        |> List.sort compare
      in
      List.iteri
        (fun i (_, key) ->
          if i <= max_sessions / 10 then Hashtbl.remove table key)
        by_expiry
  in
  let sweep ~key now =
    if now -. !last_sweep >= sweep_interval then remove_expired now;
    if Hashtbl.length table >= max_sessions && not (Hashtbl.mem table key) then
      make_room now
  in
  of_backend
    {
      find =
        (fun ~key ~now ->
          Mutex.protect lock (fun () ->
              match Hashtbl.find_opt table key with
              | Some (data, expires) when expires > now -> Some data
              | Some _ | None -> None));
      save =
        (fun ~key ~data ~expires ~now ->
          Mutex.protect lock (fun () ->
              sweep ~key now;
              Hashtbl.replace table key (data, expires)));
      delete =
        (fun ~key -> Mutex.protect lock (fun () -> Hashtbl.remove table key));
    }

(* {1 What a session holds} *)

type data = {
  values : (string * string) list;  (** In the order first set. *)
  flash : (string * string) list;
      (** Category and message, oldest first. In a request's state: those it
          came with, until taken. *)
  csrf_secret : string option;  (** 32 random bytes, made when first needed. *)
  created : float;  (** The absolute lifetime counts from here. *)
  saved : float;  (** The idle timeout counts from here. *)
}

(* Text for a store: [Query.encode] of tagged pairs, so any bytes may be in a
   name or a value and the result is plain ASCII. *)
let encode d =
  Query.encode
    ([
       ("v", "1");
       ("created", Printf.sprintf "%.3f" d.created);
       ("saved", Printf.sprintf "%.3f" d.saved);
     ]
    @ (match d.csrf_secret with
      | Some s ->
          [
            ( "csrf",
              Base64.encode_string ~pad:false ~alphabet:Base64.uri_safe_alphabet
                s );
          ]
      | None -> [])
    @ List.map (fun (c, m) -> ("f:" ^ c, m)) d.flash
    @ List.map (fun (n, v) -> ("s:" ^ n, v)) d.values)

let decode text =
  let strip prefix s =
    if String.starts_with ~prefix s then
      Some
        (String.sub s (String.length prefix)
           (String.length s - String.length prefix))
    else None
  in
  match Query.decode text with
  | Ok (("v", "1") :: ("created", created) :: ("saved", saved) :: rest) -> (
      match (float_of_string_opt created, float_of_string_opt saved) with
      | Some created, Some saved ->
          let csrf_secret, rest =
            match rest with
            | ("csrf", s) :: rest ->
                ( Result.to_option
                    (Base64.decode ~pad:false ~alphabet:Base64.uri_safe_alphabet
                       s),
                  rest )
            | rest -> (None, rest)
          in
          let flash =
            List.filter_map
              (fun (n, m) -> Option.map (fun c -> (c, m)) (strip "f:" n))
              rest
          in
          let values =
            List.filter_map
              (fun (n, v) -> Option.map (fun n -> (n, v)) (strip "s:" n))
              rest
          in
          Some { values; flash; csrf_secret; created; saved }
      | _ -> None)
  | Ok _ | Error _ -> None

(* {1 The session of the request in progress} *)

type state = {
  live : bool;  (** The request came with a live session. *)
  loaded_id : string option;
      (** The id the request came with, if it named a live server-side session.
      *)
  id : string option;  (** The id to save under; [None] until needed. *)
  data : data;
  changed : bool;
  stale_cookie : bool;
      (** The request sent a session cookie that names no live session. *)
  sealed : bool;
      (** The head of the response was built with the session saved: too late to
          change it. *)
  flash_added : (string * string) list;
      (** Messages for the next request, oldest first. *)
}

(* What is saved: the messages this request added go after those it came
   with and did not take. *)
let outgoing st = { st.data with flash = st.data.flash @ st.flash_added }

type session = {
  store : store;
  max_cookie_bytes : int;
  cell : state Atomic.t;
      (* Atomic: the handler's forked fibers and pool tasks, possibly on other
         domains, may change the session at the same time. *)
}

let current : session Field.t = Field.create ~name:"Braid_web.Session" ()

let session_in_force () =
  match Field.get current with
  | Some s -> s
  | None ->
      invalid_arg
        "Braid_web.Session: no Session.middleware is in force for this request"

let rec update s f =
  let old = Atomic.get s.cell in
  let updated = f old in
  if not (Atomic.compare_and_set s.cell old updated) then update s f

(* A change: refused once the response's head was built. *)
let change (_ : Handler.request) f =
  let s = session_in_force () in
  update s (fun st ->
      if st.sealed then
        invalid_arg
          "Braid_web.Session: the session was saved when the handler returned \
           (a streamed response): change it before returning";
      f st);
  s

let cookie_value_bytes keys d =
  String.length (Encrypted.encrypt keys ~name:"" (encode d))

(* The cookie store's limit, checked where the application changes the
   session so that the error points at the change that made it too large. *)
let check_size s =
  match s.store with
  | Server_side _ -> ()
  | In_cookie keys ->
      let n = cookie_value_bytes keys (outgoing (Atomic.get s.cell)) in
      if n > s.max_cookie_bytes then
        invalid_arg
          (Printf.sprintf
             "Braid_web.Session: the session is %d bytes once encrypted, above \
              the cookie store's %d: keep large values in a server-side store"
             n s.max_cookie_bytes)

let get r name =
  ignore (r : Handler.request);
  List.assoc_opt name (Atomic.get (session_in_force ()).cell).data.values

let set r name value =
  let s =
    change r (fun st ->
        let values =
          if List.mem_assoc name st.data.values then
            List.map
              (fun (n, v) -> if String.equal n name then (n, value) else (n, v))
              st.data.values
          else st.data.values @ [ (name, value) ]
        in
        { st with data = { st.data with values }; changed = true })
  in
  check_size s

let remove r name =
  ignore
    (change r (fun st ->
         if List.mem_assoc name st.data.values then
           {
             st with
             data =
               { st.data with values = List.remove_assoc name st.data.values };
             changed = true;
           }
         else st))

(* A new id and a new CSRF secret: what an attacker learnt of the old
   session (its id, planted before log-in; a token) is worth nothing. *)
let rotate r =
  ignore
    (change r (fun st ->
         {
           st with
           id = Some (Token.generate ());
           data = { st.data with csrf_secret = None };
           changed = true;
         }))

let empty_data now =
  { values = []; flash = []; csrf_secret = None; created = now; saved = now }

(* The old session is deleted and its cookie dropped when the response
   leaves; what the handler sets afterwards goes into a new session. *)
let invalidate r =
  let now = Services.now () in
  ignore
    (change r (fun st ->
         {
           st with
           live = false;
           id = None;
           data = empty_data now;
           changed = false;
           stale_cookie = true;
           flash_added = [];
         }))

(* {1 The middleware} *)

(* Server-side stores are keyed by a hash of the id, never the id itself: a
   lookup (a hash table's, a database index's) compares keys with an early
   exit, and by timing it an attacker could learn a prefix of a live id;
   a SHA-256 he cannot steer. A copy of the table (a backup, a replica) then
   holds no cookie that works. *)
let store_key id =
  Base64.encode_string ~pad:false ~alphabet:Base64.uri_safe_alphabet
    (Sha256.to_bin (Sha256.string id))

type config = {
  cookie_name : string;
  secure : bool;
  idle_timeout : float;
  lifetime : float;
}

let expires config d =
  Float.min (d.saved +. config.idle_timeout) (d.created +. config.lifetime)

let live config ~now d = now < expires config d

let load config store r ~now =
  let fresh ~stale =
    {
      live = false;
      loaded_id = None;
      id = None;
      data = empty_data now;
      changed = false;
      stale_cookie = stale;
      sealed = false;
      flash_added = [];
    }
  in
  match Cookie.get r config.cookie_name with
  | Error bad_request -> Error bad_request
  | Ok None -> Ok (fresh ~stale:false)
  | Ok (Some value) -> (
      let found =
        match store with
        | Server_side b ->
            Option.bind (b.find ~key:(store_key value) ~now) decode
            |> Option.map (fun d -> (Some value, d))
        | In_cookie keys -> (
            match Encrypted.decrypt keys ~name:config.cookie_name value with
            | Ok text -> Option.map (fun d -> (None, d)) (decode text)
            | Error _ -> None)
      in
      match found with
      | Some (id, data) when live config ~now data ->
          Ok
            {
              live = true;
              loaded_id = id;
              id;
              data;
              changed = false;
              stale_cookie = false;
              sealed = false;
              flash_added = [];
            }
      | Some (Some id, _) ->
          (match store with
          | Server_side b -> b.delete ~key:(store_key id)
          | In_cookie _ -> ());
          Ok (fresh ~stale:true)
      | Some (None, _) | None -> Ok (fresh ~stale:true))

let set_cookie config ~max_age value response =
  Cookie.set ~max_age ~path:"/" ~secure:config.secure ~http_only:true
    ~same_site:Lax config.cookie_name value response

(* What the response carries after the handler: the session saved and its
   cookie set when it changed, or when a tenth of the idle timeout has
   passed since it was last saved (so that an active user's session slides
   forward without a store write per request); the old session deleted
   after a rotation or an invalidation. *)
let save config s ~now response =
  let st = Atomic.get s.cell in
  let due = st.live && now -. st.data.saved >= config.idle_timeout /. 10. in
  let response =
    if st.changed || due then
      let data = { (outgoing st) with saved = now } in
      let max_age =
        max 0 (int_of_float (Float.round (expires config data -. now)))
      in
      match s.store with
      | Server_side b ->
          let id =
            match st.id with Some id -> id | None -> Token.generate ()
          in
          b.save ~key:(store_key id) ~data:(encode data)
            ~expires:(expires config data) ~now;
          (match st.loaded_id with
          | Some old when not (String.equal old id) ->
              b.delete ~key:(store_key old)
          | _ -> ());
          set_cookie config ~max_age id response
      | In_cookie keys ->
          set_cookie config ~max_age
            (Encrypted.encrypt keys ~name:config.cookie_name (encode data))
            response
    else (
      (match (s.store, st.loaded_id, st.id) with
      | Server_side b, Some old, None -> b.delete ~key:(store_key old)
      | _ -> ());
      if st.stale_cookie then
        Cookie.delete ~path:"/" config.cookie_name response
      else response)
  in
  Atomic.set s.cell { (Atomic.get s.cell) with sealed = true };
  response

let middleware ?cookie_name ?(secure = true) ?(idle_timeout = 24. *. 3600.)
    ?(lifetime = 14. *. 24. *. 3600.) ?(max_cookie_bytes = 4000) store :
    Router.middleware =
  let cookie_name =
    match cookie_name with
    | Some n -> n
    | None -> if secure then "__Host-session" else "session"
  in
  if not (Braid_http.Headers.is_name cookie_name) then
    invalid_arg ("Session.middleware: not a cookie name: " ^ cookie_name);
  if String.starts_with ~prefix:"__Host-" cookie_name && not secure then
    invalid_arg
      "Session.middleware: a __Host- cookie needs ~secure:true (browsers drop \
       it otherwise)";
  if not (idle_timeout > 0. && lifetime > 0.) then
    invalid_arg "Session.middleware: timeouts must be positive";
  let config = { cookie_name; secure; idle_timeout; lifetime } in
  fun next r ->
    let now = Services.now () in
    match load config store r ~now with
    | Error bad_request -> bad_request
    | Ok state -> (
        let s = { store; max_cookie_bytes; cell = Atomic.make state } in
        let response = Field.with_value current s (fun () -> next r) in
        let response = save config s ~now response in
        (* A stream's function runs after this returns: it still reads the
           session (changes are refused: the cookie is already set). *)
        match response.body with
        | Stream write ->
            Response.make ~headers:response.headers response.status
              (Stream (fun w -> Field.with_value current s (fun () -> write w)))
        | Empty | String _ | File _ | Upgrade _ -> response)

module Private = struct
  let in_force () = Option.is_some (Field.get current)

  let csrf_secret ~create =
    let s = session_in_force () in
    match (Atomic.get s.cell).data.csrf_secret with
    | Some secret -> Some secret
    | None when not create -> None
    | None ->
        let made = Token.random_bytes 32 in
        update s (fun st ->
            match st.data.csrf_secret with
            | Some _ -> st
            | None ->
                if st.sealed then
                  invalid_arg
                    "Braid_web.Session: a CSRF token was first asked for after \
                     the session was saved (in a streamed response): ask for \
                     it in the handler";
                {
                  st with
                  data = { st.data with csrf_secret = Some made };
                  changed = true;
                });
        (Atomic.get s.cell).data.csrf_secret

  let add_flash r ~category message =
    let s =
      change r (fun st ->
          {
            st with
            flash_added = st.flash_added @ [ (category, message) ];
            changed = true;
          })
    in
    check_size s

  let take_flash r =
    match (Atomic.get (session_in_force ()).cell).data.flash with
    | [] -> []
    | _ ->
        let taken = ref [] in
        ignore
          (change r (fun st ->
               taken := st.data.flash;
               { st with data = { st.data with flash = [] }; changed = true }));
        !taken
end
