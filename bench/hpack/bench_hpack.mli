(** The [hpack] experiment: Braid's HPACK encoder and decoder (RFC 7541, in
    OCaml) against libnghttp2's, the C library nghttp2, curl and h2o's peers
    use, on the header lists of a browser's connection: time and allocation per
    field block, and the encoded size. *)

val experiment : Bench_harness.experiment
