(** A parsed response head: the status line and the header section, and how the
    body that follows is framed.

    {!Response_parser.read_response} returns it as soon as the empty line that
    ends the header section is read, before any byte of the body; the body is
    then read with {!Response_body}. *)

(** How the body is framed (RFC 9112 §6.3). *)
type body =
  | No_body
      (** None: a response to HEAD, a [1xx], [204] or [304] (whatever the fields
          say), a [2xx] to CONNECT, or [Content-Length: 0]. *)
  | Content_length of int  (** Exactly that many bytes, at least 1. *)
  | Chunked  (** [Transfer-Encoding] ending with [chunked]. *)
  | Until_close
      (** Neither field: the body is everything until the server closes the
          connection (RFC 9112 §6.3, item 8), which then cannot be reused. *)

type t = {
  version : Request.version;
  status : int;  (** 100 to 599. *)
  reason : string;  (** The reason phrase as sent, possibly empty. *)
  headers : Headers.t;
  body : body;
  keep_alive : bool;
      (** Whether the connection may carry another request after this response's
          body: HTTP/1.1 unless [Connection: close], HTTP/1.0 only with
          [Connection: keep-alive], and never with {!Until_close}. *)
}

val header : t -> string -> string option
(** [header t name] is [Headers.find t.headers name]. *)

val is_interim : t -> bool
(** [is_interim t] is [true] for [1xx] but [101]: an interim response (such as
    [100 Continue]) that the final one follows on the same connection. *)

val pp : Format.formatter -> t -> unit
(** [pp] prints ["HTTP/1.1 200 OK (Content_length 5, keep-alive)"]. *)
