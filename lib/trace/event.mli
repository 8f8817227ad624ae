(** An event read back. *)

type what =
  | Fiber_created of { child : int; parent : int }
  | Fiber_running of int
  | Fiber_suspended of { fiber : int; on : Probe.waiting_on; detail : int }
  | Fiber_cancelled of int
  | Fiber_finished of int
  | Switch_opened of { switch : int; fiber : int }
  | Switch_closed of int
  | Pool_submitted of { task : int; submitter : int }
  | Pool_stolen of { thief : int; victim : int }
  | Pool_running of int
  | Loop_waiting of { timeout_ms : int }
  | Loop_woken of { events : int }
  | Http_began of {
      fiber : int;
      meth : string;
      path : string;
      request_id : string;
    }
  | Http_ended of { fiber : int; status : int; bytes : int }
  | Gc_began of string  (** A runtime phase ([major_slice], [minor], ...). *)
  | Gc_ended of string
  | Lost of int  (** The ring wrapped before these were read. *)

type t = {
  time_ns : int;  (** The runtime's monotonic clock; 0 for [Lost]. *)
  domain : int;  (** The ring: the index of the domain that emitted it. *)
  what : what;
}
