(** HTTP dates (RFC 9110 §5.6.7): formatting as IMF-fixdate, parsing the three
    formats a recipient must accept. Pure functions, callable from anywhere. *)

val format : float -> string
(** [format t] is the IMF-fixdate of [t] seconds since the Unix epoch, rounded
    down to the second: ["Sun, 06 Nov 1994 08:49:37 GMT"]. Dates before the
    epoch are clamped to it. *)

val parse : ?now:float -> string -> float option
(** [parse ~now s] is the time denoted by [s] in seconds since the epoch (an
    integer value), if [s] is an IMF-fixdate, an obsolete RFC 850 date
    (["Sunday, 06-Nov-94 08:49:37 GMT"]) or an asctime date
    (["Sun Nov  6 08:49:37 1994"]). Surrounding whitespace is ignored; anything
    else, including an impossible day of the month, gives [None].

    An RFC 850 date's two-digit year is the first year ending in those digits
    from the year of [now] on ([now] in seconds since the epoch: when the date
    is read), or the one a century before if that puts the date more than 50
    years after [now], as RFC 9110 §5.6.7 requires. Without [now], 00-69 are
    20xx and 70-99 19xx: the rule as it read in 2019. *)
