(** What every benchmark shares: timing, result rows, the human table and
    [bench/results/NAME.json]. *)

type row = { name : string; metric : string; value : float; unit : string }
(** One measured figure: [name] says what ran (e.g. ["braid mvar serial"]),
    [metric] what was measured (e.g. ["ns/message"], ["ratio to lwt_mvar"]). *)

type experiment = {
  name : string;  (** Used on the command line and as the JSON file name. *)
  summary : string;  (** One line for [list]. *)
  run : quick:bool -> row list;
      (** Runs the experiment; [quick] must finish in well under a minute. *)
}

val row : string -> string -> float -> string -> row
(** [row name metric value unit]. *)

val now_s : unit -> float
(** Monotonic time in seconds. *)

val time_s : (unit -> unit) -> float
(** [time_s f] is how long [f ()] took, in seconds. *)

val median : float list -> float

val repeat_median : int -> (unit -> float) -> float
(** [repeat_median n measure] runs [measure] [n] times and returns the median:
    one outlier run (a noisy neighbour) does not move it. *)

val ratio : string -> float -> row
(** [ratio name r] is [row name "ratio" r "x"]; by convention [r > 1] means
    Braid did better (say which way in [name], e.g. ["lwt_mvar / braid"]). *)

val load_average : unit -> float
(** The 1-minute load average ([nan] if [/proc/loadavg] is unreadable): above
    the core count, other work shares the machine and figures are suspect. *)

val load_row : string -> row
(** [load_row "at start"] is the row [machine, load average (1 min) at start]
    that experiments print first (and ["at end"] last). *)

val print_table : string -> row list -> unit
(** [print_table title rows] prints an aligned table to stdout. *)

val results_dir : unit -> string
(** [bench/results] of the source tree (found from the current directory
    upward), created if needed. *)

val write_json : experiment:string -> row list -> string
(** Writes [bench/results/<experiment>.json] and returns its path. *)

val progress : ('a, out_channel, unit) format -> 'a
(** Prints a progress line on stderr (flushed) so long runs show life. *)

(** {1 Runs that can fail}

    A run of a load generator that saw an error is a failed run, not a figure.
*)

val failures : ('a, 'e) result list -> int
(** How many of the runs failed. *)

val median_or_failed : ('a -> float) -> ('a, 'e) result list -> float
(** The median of [f] over the runs, or [nan] if any failed: a median over the
    others would hide that the server could not take the load. *)

val failed_row : string -> ('a, 'e) result list -> row list
(** [[]] if no run failed, else a row counting the failed runs. *)

val content_length : string -> int option
(** The [Content-Length] of an HTTP response head (header names in any case,
    lines ended by CRLF or LF), if it has one: what the benchmarks' own clients
    read to frame a response. *)
