(** A connection's progress, as its pipeline records it and its loop's sweeper
    judges it: which phase the connection is in, its deadlines, how far it got
    writing, how it waits between requests. It outlives the pipeline (a parked
    connection keeps it, and the pipeline made anew when it goes on).

    Confined to the connection's loop (the sweeper runs there too), except
    [draining], the server's "shutting down" flag, set from any domain. Internal
    to the server. *)

type phase =
  | Idle  (** Waiting for the first byte of a request; owes nothing. *)
  | Head  (** Reading a request head. *)
  | Body  (** Serving a request: its body, its handler, its response. *)
  | Upgraded
      (** Handed over after a [101] ({!Upgraded}): never idle, closed by
          {!Upgraded.Shutdown} when the server drains. *)

(** How an idle connection waits for its next request, as the sweeper sees it.
*)
type idle_wait =
  | Not_waiting
      (** Running, or waiting for something else than a request's first bytes.
      *)
  | Awaiting
      (** Waiting for bytes without reading: its buffers are not in use, and
          {!release} may take them. *)
  | Reading
      (** In the read for a request's first bytes. It waits only after a
          readiness event that found nothing (an earlier read had taken the
          bytes): the read holds the input buffer, so {!release} may not take
          it, but the read can be interrupted like a wait. *)

type t = {
  draining : bool Atomic.t;
  mutable phase : phase;
  mutable first : bool;  (** No request has been read yet. *)
  mutable head_deadline : int;
      (** Monotonic nanoseconds; 0 until the head's first refill (a head read in
          one go never reads the clock). *)
  mutable idle_deadline : int;
      (** Monotonic nanoseconds: the end of the current idle wait. *)
  mutable idle_since : int;
      (** Monotonic nanoseconds: when the current idle wait began (the
          connection's start, for the first request). *)
  mutable writes : int;
      (** Twice the pieces written, plus one while a piece is being written: two
          increments per piece, no clock read. *)
  mutable send_timeout : int;  (** Nanoseconds. *)
  mutable keep_alive : int;
      (** Nanoseconds: the keep-alive timeout, worked out once per connection
          rather than per request. *)
  mutable idle_wait : idle_wait;
      (** One field for both idle waits: a parked connection holds this record,
          and a word more here is a word more per idle connection. *)
  mutable idle_rounds : int;
      (** The sweeper's count of its looks at this idle wait. *)
  mutable release : unit -> unit;
      (** Gives the connection's buffers back to their pool; call only while
          [Awaiting]. *)
  mutable parked : bool;
      (** The connection waits (or has just waited) for its next request outside
          its handlers: the pipeline, back inside, reads at once and keeps the
          idle deadline it had. *)
  mutable seen_writes : int;
  mutable seen_at : int;
      (** [send_stalled]'s memory: [writes] when it last looked, and when it
          first saw that value. *)
}

val drain_grace : float
(** Seconds a connection idle when the server begins to drain may still send a
    request (answered with [Connection: close]): 1. A request already on its way
    arrives well within it, and an idle client delays the shutdown no longer. *)

val create : bool Atomic.t -> t
(** [create draining] is the progress of a new connection (phase [Body] until
    the pipeline starts waiting). *)

val start : t -> Config.timeouts -> now:int -> unit
(** [start c timeouts ~now] sets the deadlines of a connection that starts at
    [now] (monotonic nanoseconds): its first request's head is due
    [timeouts.request_header] after it, and the send and keep-alive timeouts are
    worked out once. *)

val ns_of_seconds : float -> int
(** [ns_of_seconds s] in nanoseconds, clamped to [[0, 10{^18}]] (about 30
    years), so that no configured timeout wraps around into the past. *)

val is_idle : t -> bool
(** [is_idle c] is true while the connection waits for the first byte of a
    request and owes nothing: cancelling it then loses no request. *)

val idle_deadline : t -> int
(** [idle_deadline c] is when the current idle wait must end, in monotonic
    nanoseconds of the services' clock: [timeouts.request_header] after the
    start for the first request, [timeouts.keep_alive] after the previous
    response for later ones. The pipeline does not enforce it itself (that would
    cost a timer per request): the loop's sweeper cancels a connection idle past
    it. *)

val send_stalled : t -> now:int -> bool
(** [send_stalled c ~now] (monotonic nanoseconds) is true once the connection
    has been in the same write for [send_timeout] or more, as far as the calls
    to it can tell: it remembers the write it last saw in progress and when, so
    the one caller, polling every [tick], detects a stall within
    [send_timeout + 2 * tick] and costs the pipeline no clock read. *)
