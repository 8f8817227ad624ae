include Log_event

let emit e = Services.log e

(* One effect for the clock and the log both. *)
let message level text =
  let services = Services.current () in
  services.log (Message { time = services.now (); level; text })

let error text = message Error text
let warning text = message Warning text
let info text = message Info text
let debug text = message Debug text

module Request_id = struct
  (* The id is worked out when first read (a log line, a trace event, the
     echo), not for every request: most requests write no line but the
     access log's, and none when there is no access log. [id] is [""] until
     then; the first reader's value is kept (compare-and-set), so that every
     line of a request, on any domain, shows the same id. *)
  type t = { head : Braid_http.Request.t option; id : string Atomic.t }

  let is_hex_digit = function '0' .. '9' | 'a' .. 'f' -> true | _ -> false
  let all_hex s = String.for_all is_hex_digit s
  let zeros n = String.make n '0'

  (* version "-" trace-id "-" parent-id "-" flags: 2, 32, 16 and 2 hex
     digits. Version ff is invalid, and so is an all-zero id; a version
     above 00 may append fields, which are ignored (W3C Trace Context, 3.2). *)
  let of_traceparent header =
    let h = String.trim header in
    if String.length h < 55 then Result.Error "traceparent: too short"
    else if h.[2] <> '-' || h.[35] <> '-' || h.[52] <> '-' then
      Result.Error "traceparent: not version-traceid-parentid-flags"
    else
      let version = String.sub h 0 2 and id = String.sub h 3 32 in
      let parent = String.sub h 36 16 and flags = String.sub h 53 2 in
      if not (all_hex version && all_hex id && all_hex parent && all_hex flags)
      then Result.Error "traceparent: not lowercase hexadecimal"
      else if version = "ff" then Result.Error "traceparent: version ff"
      else if version = "00" && String.length h <> 55 then
        Result.Error "traceparent: version 00 with trailing data"
      else if id = zeros 32 then Result.Error "traceparent: all-zero trace id"
      else if parent = zeros 16 then
        Result.Error "traceparent: all-zero parent id"
      else Ok { head = None; id = Atomic.make id }

  (* Generated ids: 16 random hex digits drawn once per process, then a
     counter of the generating domain with the domain's index on top, so
     that domains never contend for one counter nor repeat each other. *)
  let process_prefix =
    lazy
      (let state = Random.State.make_self_init () in
       Printf.sprintf "%08x%08x"
         (Random.State.bits state land 0xffffffff)
         (Random.State.bits state land 0xffffffff))

  type counter = { mutable next : int }

  let counter = Domain.DLS.new_key (fun () -> { next = 0 })
  let hex = "0123456789abcdef"

  (* Once per request when something reads the id (the access log of a
     logger, tracing): the digits without bounds checks, [land 15] keeping
     each index within [hex]. A loop, not a local recursive function, whose
     closure would be allocated and called per digit. *)
  let generated () =
    let c = Domain.DLS.get counter in
    c.next <- c.next + 1;
    let n = ((Domain.self () :> int) lsl 44) lor (c.next land 0xfffffffffff) in
    let b = Bytes.create 32 in
    Bytes.blit_string (Lazy.force process_prefix) 0 b 0 16;
    for i = 0 to 15 do
      Bytes.unsafe_set b (31 - i)
        (String.unsafe_get hex ((n lsr (4 * i)) land 15))
    done;
    Bytes.unsafe_to_string b

  let generate () = { head = None; id = Atomic.make (generated ()) }
  let of_request req = { head = Some req; id = Atomic.make "" }

  let of_head (req : Braid_http.Request.t) =
    match Braid_http.Request.header req "traceparent" with
    | None -> generated ()
    | Some h -> (
        match of_traceparent h with
        | Ok t -> Atomic.get t.id
        | Result.Error _ -> generated ())

  let to_string t =
    match Atomic.get t.id with
    | "" ->
        let id =
          match t.head with Some req -> of_head req | None -> generated ()
        in
        if Atomic.compare_and_set t.id "" id then id else Atomic.get t.id
    | id -> id

  let key : t Braid.Fiber.key = Braid.Fiber.create_key ~name:"request id" ()
  let current () = Braid.Fiber.get key
  let with_id t f = Braid.Fiber.with_binding key t f
  let with_id_in fiber t f = Braid.Private.Fiber.with_binding_in fiber key t f

  let echo ?(header = "X-Request-Id") (handler : Handler.t) request =
    let response = handler request in
    match current () with
    | Some id -> Response.with_header header (to_string id) response
    | None -> response
end
