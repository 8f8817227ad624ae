(** Header (or trailer) fields of a request, in the order received.

    Names keep the case they were sent with; lookups compare names ASCII
    case-insensitively without allocating. Values have their surrounding
    whitespace removed. Repeated fields stay separate entries; {!find} returns
    the first. *)

type t

val empty : t

val of_list : (string * string) list -> t
(** [of_list fields] keeps the order of [fields]. No validation. *)

(** {1 What a field may hold (RFC 9110 §5)} *)

val is_tchar : char -> bool
(** A token character: letters, digits and [!#$%&'*+-.^_`|~]. *)

val is_field_char : char -> bool
(** What a field value may hold: a visible character, obs-text (bytes from
    0x80), space or horizontal tab. Not CR, LF, NUL nor another control. *)

val is_name : string -> bool
(** [is_name s]: [s] is a token (at least one {!is_tchar}), as a field name must
    be. *)

val is_value : string -> bool
(** [is_value s]: every byte of [s] is a {!is_field_char}: a value that cannot
    end its line early or smuggle another field (response splitting). *)

val of_flat_array : string array -> t
(** [of_flat_array a] takes ownership of [a = [| name0; value0; name1; ... |]]
    (even length; the caller must not change it afterwards). For parsers: it
    costs no copy. *)

val to_list : t -> (string * string) list
val length : t -> int

val name : t -> int -> string
(** [name t i] is the name of field [i], from [0].

    Raises [Invalid_argument] unless [0 <= i < length t]. *)

val value : t -> int -> string
(** [value t i] is the value of field [i]. *)

val find : t -> string -> string option
(** [find t name] is the value of the first field called [name], in any case. *)

val find_all : t -> string -> string list
(** [find_all t name] is the values of every field called [name], in order. *)

val mem : t -> string -> bool
val count : t -> string -> int

val has_token : t -> string -> string -> bool
(** [has_token t name token] is [true] if a field [name] holds [token] as an
    element of its comma-separated list, both compared case-insensitively:
    [has_token h "connection" "close"]. *)

val iter : (string -> string -> unit) -> t -> unit
val fold : (string -> string -> 'a -> 'a) -> t -> 'a -> 'a

val equal_name : string -> string -> bool
(** [equal_name a b] compares field names ASCII case-insensitively. *)

val is_hop_by_hop : string -> bool
(** [is_hop_by_hop name]: [name] is one of the fields RFC 9110 §7.6.1 says
    belong to one connection ([Connection], [Keep-Alive], [Proxy-Connection],
    [TE], [Transfer-Encoding], [Upgrade]), in any case. Fields a [Connection]
    header names are the caller's to add. No allocation. *)

val list_has_token : string -> string -> bool
(** [list_has_token value token] is [true] if the comma-separated [value] holds
    [token] (case-insensitively, ignoring whitespace around elements). *)

val pp : Format.formatter -> t -> unit
