(* A framed body is a request body's framing exactly: the same reader, its
   errors restated as a gateway's. Only a body that runs until the
   connection closes needs code of its own. *)

type until_close = {
  input : Input.t;
  max_body : int;
  mutable total : int;
  mutable state : [ `Reading | `Finished | `Failed of Parse_error.t ];
}

type t = Framed of Request_body.t | Until_close of until_close

let as_gateway (e : Parse_error.t) = { e with status = 502; close = true }
let restate = function Ok _ as ok -> ok | Error e -> Error (as_gateway e)

let create input (limits : Limits.t) (framing : Response_head.body) =
  match framing with
  | No_body -> Framed (Request_body.create input limits No_body)
  | Content_length n ->
      Framed (Request_body.create input limits (Content_length n))
  | Chunked -> Framed (Request_body.create input limits Chunked)
  | Until_close ->
      Until_close
        { input; max_body = limits.max_body; total = 0; state = `Reading }

let too_large =
  { Parse_error.status = 502; reason = "response body too large"; close = true }

(* Bytes readable now at [input.pos]: at least 1, or 0 at the end. *)
let rec ready u =
  match u.state with
  | `Finished -> Ok 0
  | `Failed e -> Error e
  | `Reading ->
      let available = Input.length u.input in
      if available > 0 then
        if available > u.max_body - u.total then (
          u.state <- `Failed too_large;
          Error too_large)
        else Ok available
      else if Input.refill u.input = 0 then (
        u.state <- `Finished;
        Ok 0)
      else ready u

let advance u n =
  Input.consume u.input n;
  u.total <- u.total + n

let read t buf off len =
  match t with
  | Framed r -> restate (Request_body.read r buf off len)
  | Until_close u -> (
      if len <= 0 || off < 0 || off > Bytes.length buf - len then
        invalid_arg "Response_body.read";
      match ready u with
      | Ok 0 -> Ok 0
      | Ok available ->
          let n = if available < len then available else len in
          Bytes.blit u.input.buf u.input.pos buf off n;
          advance u n;
          Ok n
      | Error _ as e -> e)

let iter t f =
  match t with
  | Framed r -> restate (Request_body.iter r f)
  | Until_close u ->
      let rec loop () =
        match ready u with
        | Ok 0 -> Ok ()
        | Ok n ->
            f u.input.buf u.input.pos n;
            advance u n;
            loop ()
        | Error _ as e -> e
      in
      loop ()

let to_string t =
  match t with
  | Framed r -> restate (Request_body.to_string r)
  | Until_close _ -> (
      let out = Buffer.create 1024 in
      match iter t (fun buf off len -> Buffer.add_subbytes out buf off len) with
      | Ok () -> Ok (Buffer.contents out)
      | Error _ as e -> e)

let drain t =
  match t with
  | Framed r -> restate (Request_body.drain r)
  | Until_close _ -> iter t (fun _ _ _ -> ())

let is_finished = function
  | Framed r -> Request_body.is_finished r
  | Until_close u -> u.state = `Finished

let trailers = function
  | Framed r -> Request_body.trailers r
  | Until_close _ -> Headers.empty
