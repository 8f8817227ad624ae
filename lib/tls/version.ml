(* OpenSSL's version-flexible method (TLS_method) is the binding's [SSLv23],
   deprecated for its name only: every context narrows it at once to TLS 1.2
   and 1.3 with [set_min_protocol_version] and [set_max_protocol_version]. *)
let[@alert "-deprecated"] flexible = Ssl.SSLv23
