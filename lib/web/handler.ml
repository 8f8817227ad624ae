open Braid_http

module Ending = struct
  type t = { mutable actions : (unit -> unit) list; mutable ended : bool }

  let create () = { actions = []; ended = false }

  (* Already ended, so never mutated: one value serves every caller. *)
  let finished = { actions = []; ended = true }

  let add t action =
    if t.ended then action () else t.actions <- action :: t.actions

  let run t =
    if not t.ended then (
      t.ended <- true;
      let actions = List.rev t.actions in
      t.actions <- [];
      (* Runs while the exchange unwinds, perhaps from a failure: an action's
         own failure must neither hide that one nor keep the other actions
         from running. *)
      List.iter (fun action -> try action () with _ -> ()) actions)
end

type request = {
  head : Request.t;
  path : string;
  query : string option;
  params : (string * string) list;
  tail : string option;
  peer : Unix.sockaddr option;
  secure : bool;
  body : Body.t;
  now : float;
  ending : Ending.t;
}

type t = request -> Response.t

let at_end r action = Ending.add r.ending action
let param r name = List.assoc_opt name r.params
let header r name = Request.header r.head name
let body_string r = Body.to_string r.body

(* A 503 is a body refused for the spool budget: the budget frees as the
   uploads in progress end, in seconds rather than at once. *)
let retry_after = "5"

let bad_request (e : Parse_error.t) =
  if e.status = 503 then
    Response.error ~headers:[ ("Retry-After", retry_after) ] 503 e.reason
  else Response.error e.status e.reason

module Syntax = struct
  let ( let* ) r f = match r with Ok x -> f x | Error response -> response
end

let request_for_test ?(meth = Method.GET) ?(headers = []) ?(params = []) ?tail
    ?(secure = false) ?(body = "") target =
  let headers = Headers.of_list headers in
  let path, query = Url_path.split_target target in
  {
    head =
      {
        meth;
        target;
        target_form = Origin_form;
        version = Http_1_1;
        headers;
        body =
          (if body = "" then No_body else Content_length (String.length body));
        keep_alive = true;
        expect_continue = false;
      };
    path;
    query;
    params;
    tail;
    peer = None;
    secure;
    body = Body.of_string body;
    now = 0.;
    ending = Ending.create ();
  }
