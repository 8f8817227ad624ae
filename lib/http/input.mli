(** The parser's input: a byte buffer with a window of unread bytes, refilled
    through an effect or by the input's own reader.

    The parser reads the window [buf.[pos] .. buf.[lim - 1]] with plain index
    arithmetic. Only when it needs a byte past [lim] does it perform {!Refill}:
    once per refill, never once per byte. Whoever handles the effect appends
    bytes after [lim] (usually with {!fill}) and answers with how many it
    appended; [0] means end of input.

    So the same parser reads a socket ({!handle} or {!with_reader} with a read
    function that may block its fiber), a string ({!with_string}) or a list of
    chunks ({!with_chunks}, for tests).

    An input created with its own reader ({!create}[ ~read]) needs no handler:
    each refill calls [fill t read] directly, in the fiber that refills. That
    costs no effect and no handler (a server's connection refills once per
    request), and any fiber holding the input can read it (a fiber the request
    handler forks to read the body).

    One input serves a whole connection: bytes left after a request (the start
    of a pipelined request) stay in the window for the next one.

    {[
      let read_target fd =
        Input.with_reader
          (fun buf off len -> Unix.read fd buf off len)
          (fun input ->
            match Request_parser.read_request input Limits.default with
            | Ok request -> Some request.target
            | Error _ -> None)
    ]} *)

type storage = {
  take : unit -> bytes;  (** A buffer to use (at least 16 bytes). *)
  give : bytes -> unit;  (** A buffer no longer used. *)
}
(** Where an input may take its buffer from and give it back to, so that an
    input with nothing unread holds no buffer (a server's idle connection). *)

type t = private {
  mutable buf : bytes;  (** The storage; replaced when it grows. *)
  mutable pos : int;  (** First unread byte. *)
  mutable lim : int;  (** One past the last valid byte. *)
  mutable capacity : int;  (** [Bytes.length buf]. *)
  storage : storage option;
  reader : (bytes -> int -> int -> int) option;
      (** The input's own reader ({!create}[ ~read]), if any. *)
}
(** Fields are readable for the parsers of this library; only this module's
    functions change them. A refill may move the window ([pos] and [lim] change
    together, the bytes between them are kept) and may replace [buf]: indices
    into the buffer must be re-based on [pos] after {!val-refill}. *)

type _ Effect.t +=
  | Refill : t -> int Effect.t
        (** [Refill input] asks for bytes to be appended after [input.lim]; the
            answer is how many were appended, [0] at end of input. The handler
            must keep the bytes of the window (as {!fill} does). *)

val release : t -> unit
(** [release t] gives [t]'s buffer back to its storage when the window is empty
    ([length t = 0]); the next {!fill} takes one again. Does nothing for an
    input without storage, or with bytes unread. *)

val create :
  ?size:int ->
  ?buffer:bytes ->
  ?storage:storage ->
  ?read:(bytes -> int -> int -> int) ->
  unit ->
  t
(** [create ~size ()] is an empty input whose buffer starts at [size] bytes
    (default 4096) and grows when a line does not fit. With [buffer] (at least
    16 bytes), that storage is used instead of a new one: its contents are
    overwritten, and it must not be used elsewhere until the input is done (a
    server reuses the buffers of finished connections). With [storage], the
    buffer comes from there when first needed, and {!release} gives it back.
    With [read], the input is its own reader: {!val-refill} is [fill t read],
    with no effect (see {!handle} for what [read] may do). *)

val of_string : string -> t
(** [of_string s] is an input whose window holds a copy of [s]. *)

val length : t -> int
(** [length t] is the number of unread bytes in the window. *)

val consume : t -> int -> unit
(** [consume t n] marks [n] bytes as read.

    Raises [Invalid_argument] unless [0 <= n <= length t]. *)

val refill : t -> int
(** [refill t] is [fill t read] for an input with its own reader [read]; else it
    performs [Refill t] once. It returns the number of bytes appended ([0] at
    end of input). Exceptions raised by the reader or the handler (for example a
    socket error or [Braid.Cancelled]) are raised here.

    Raises [Effect.Unhandled] if [t] has no reader and no handler is installed.
*)

val fill : t -> (bytes -> int -> int -> int) -> int
(** [fill t read] makes room after the window (moving the window to the front of
    the buffer, or growing the buffer when the window fills more than half of
    it), calls [read buf off len] once to write at most [len] bytes at [off],
    appends what it wrote and returns that count. Handlers call it.

    Raises [Invalid_argument] if [read] returns a count outside [0, len]. *)

(** {1 Handlers} *)

val handle : t -> (bytes -> int -> int -> int) -> (unit -> 'a) -> 'a
(** [handle t read f] runs [f ()], answering every [Refill t] performed inside
    with [fill t read]. [read buf off len] returns the number of bytes it wrote,
    [0] at end of input; it may block (for example by suspending a fiber until a
    socket is readable). An exception raised by [read] is raised at the [refill]
    that asked, so it unwinds the parser untouched. [Refill] of another input is
    passed on to an outer handler. An input with its own reader
    ({!create}[ ~read]) performs no [Refill]: under [handle], it still refills
    with its own reader, and [read] is never called. *)

val with_reader :
  ?size:int -> ?buffer:bytes -> (bytes -> int -> int -> int) -> (t -> 'a) -> 'a
(** [with_reader read f] is [f t] for a fresh [t = create ?size ?buffer ()],
    under [handle t read]. *)

val with_string : string -> (t -> 'a) -> 'a
(** [with_string s f] runs [f] on an input holding [s] whole; any refill answers
    end of input. *)

val with_chunks : ?size:int -> string list -> (t -> 'a) -> 'a
(** [with_chunks chunks f] runs [f] on an empty input; each refill appends the
    next chunk (or as much of it as fits; the rest comes at the next refill),
    then end of input. [with_chunks] on one-byte chunks feeds the parser a byte
    per refill. *)
