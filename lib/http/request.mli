(** A parsed request head: everything before the body.

    {!Request_parser.read_request} returns it as soon as the empty line ending
    the header section is read, before any byte of the body, so the server can
    answer [Expect: 100-continue] (see {!expect_continue}) or refuse the body
    first. The body is then read with {!Request_body}. *)

type version =
  | Http_1_0
  | Http_1_1
      (** [HTTP/1.x] with [x > 1] is read as [Http_1_1] (RFC 9110 §2.5). *)
  | Http_2
      (** A request of an HTTP/2 stream (RFC 9113): never read by
          {!Request_parser}, made by the server's HTTP/2 connection. *)

(** The form of the request-target (RFC 9112 §3.2). *)
type target_form =
  | Origin_form  (** [/path?query]: the usual one. *)
  | Absolute_form  (** [http://host/path]: requests to proxies. *)
  | Authority_form  (** [host:port]: only with [CONNECT]. *)
  | Asterisk_form  (** [*]: only with [OPTIONS]. *)

(** How the body is framed (RFC 9112 §6.3). *)
type body =
  | No_body  (** No Content-Length nor Transfer-Encoding, or length 0. *)
  | Content_length of int  (** Exactly that many bytes, at least 1. *)
  | Chunked  (** [Transfer-Encoding: chunked]. *)

type t = {
  meth : Method.t;
  target : string;  (** As sent: not decoded, not normalised. *)
  target_form : target_form;
  version : version;
  headers : Headers.t;
  body : body;
  keep_alive : bool;
      (** Whether the connection may serve another request after this one: see
          {!keep_alive_of}. *)
  expect_continue : bool;
      (** [Expect: 100-continue] in an HTTP/1.1 request (HTTP/1.0 clients do not
          wait for 100, RFC 9110 §10.1.1). *)
}

val header : t -> string -> string option
(** [header t name] is [Headers.find t.headers name]. *)

val keep_alive_of : version -> Headers.t -> bool
(** [keep_alive_of version headers]: HTTP/1.1 keeps the connection unless
    [Connection] lists [close]; HTTP/1.0 only if it lists [keep-alive] and not
    [close] (RFC 9112 §9.3); HTTP/2 always (its connection outlives a stream).
*)

val expect_continue_of : version -> Headers.t -> bool
(** [expect_continue_of version headers] is [true] for HTTP/1.1 or HTTP/2 with
    [100-continue] (case-insensitively) in the list of an [Expect] field. *)

val version_to_string : version -> string
(** ["HTTP/1.0"], ["HTTP/1.1"] or ["HTTP/2.0"] (as access logs write it). *)

val pp : Format.formatter -> t -> unit
