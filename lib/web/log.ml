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
     access log's, and none when there is no access log. The cell holds the
     request until then; the first reader's value is kept (compare-and-set),
     so that every line of a request, on any domain, shows the same id. One
     cell and one constructor: 4 words per request, against 7 for a record
     of the request's option and a cell. *)
  type state = Of_head of Braid_http.Request.t | Id of string
  type t = state Atomic.t

  let is_hex_digit = function '0' .. '9' | 'a' .. 'f' -> true | _ -> false
  let all_hex s = String.for_all is_hex_digit s
  let zeros n = String.make n '0'

  (* version "-" trace-id "-" parent-id "-" flags: 2, 32, 16 and 2 hex
     digits. Version ff is invalid, and so is an all-zero id; a version
     above 00 may append fields, which are ignored (W3C Trace Context, 3.2). *)
  let trace_id_of header =
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
      else Ok id

  (* Generated ids: 16 random hex digits drawn once per process, then a
     counter of the generating domain with the domain's index on top, so
     that domains never contend for one counter nor repeat each other. The
     prefix is drawn when the program starts, not on first use: a lazy value
     forced by two domains at once raises. *)
  let process_prefix =
    let state = Random.State.make_self_init () in
    Printf.sprintf "%08x%08x"
      (Random.State.bits state land 0xffffffff)
      (Random.State.bits state land 0xffffffff)

  let hex = "0123456789abcdef"

  (* The counter is the low 44 bits (the last 11 digits), the domain's index
     above them. *)
  let counter_digits = 11

  (* Each domain keeps the digits of its last id and counts in them as an
     odometer does: the next id differs in its last digit fifteen times out
     of sixteen, so generating one costs an increment and a copy, not sixteen
     conversions (generated for every request whose id is read: a logger's
     access line, a trace). The counter wraps to 0 at 2^44, the domain's
     digits untouched. *)
  let last_digits =
    Domain.DLS.new_key (fun () ->
        let n = (Domain.self () :> int) lsl (4 * counter_digits) in
        Bytes.init 32 (fun i ->
            if i < 16 then process_prefix.[i]
            else hex.[(n lsr (4 * (31 - i))) land 15]))

  let rec count b i =
    if i >= 32 - counter_digits then
      match Bytes.get b i with
      | 'f' ->
          Bytes.set b i '0';
          count b (i - 1)
      | '9' -> Bytes.set b i 'a'
      | digit -> Bytes.set b i (Char.chr (Char.code digit + 1))

  let generated () =
    let b = Domain.DLS.get last_digits in
    count b 31;
    Bytes.to_string b

  let of_traceparent header =
    match trace_id_of header with
    | Ok id -> Ok (Atomic.make (Id id))
    | Result.Error _ as e -> e

  let generate () = Atomic.make (Id (generated ()))
  let of_request req = Atomic.make (Of_head req)

  let of_head (req : Braid_http.Request.t) =
    match Braid_http.Request.header req "traceparent" with
    | None -> generated ()
    | Some h -> (
        match trace_id_of h with Ok id -> id | Result.Error _ -> generated ())

  let rec to_string t =
    match Atomic.get t with
    | Id id -> id
    | Of_head req as seen ->
        let id = of_head req in
        if Atomic.compare_and_set t seen (Id id) then id
        else (* Another reader's value came first. *)
          to_string t

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
