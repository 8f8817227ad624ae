(* The one custom Runtime_events type of Braid's events, three integers and
   three strings: that of [http.begin] and of the wide twins of the packed
   int events (Probe). On the emitting side the value written is a per-domain
   scratch record, filled in place, so that emitting allocates nothing; the
   consumer decodes each event into a record of its own. *)

type t = {
  mutable a : int;
  mutable b : int;
  mutable c : int;
  mutable s1 : string;
  mutable s2 : string;
  mutable s3 : string;
}

val make : unit -> t
val ty : t Runtime_events.Type.t

val scratch : unit -> t
(** The calling domain's record to fill before a write. Its strings are those of
    the domain's last [http.begin] until the next one: a writer of another event
    sets them to [""]. *)
