let mapped_prefix = "::ffff:"

(* [Unix] gives no access to an address's bytes: its text is the portable
   view. Only IPv6 addresses pay for it, and a mapped one prints in the
   dotted form ("::ffff:192.0.2.1"). *)
let unmapped_inet ip =
  if not (Unix.is_inet6_addr ip) then ip
  else
    let text = Unix.string_of_inet_addr ip in
    if String.starts_with ~prefix:mapped_prefix text && String.contains text '.'
    then
      let prefix = String.length mapped_prefix in
      match
        Unix.inet_addr_of_string
          (String.sub text prefix (String.length text - prefix))
      with
      | v4 -> v4
      | exception Failure _ -> ip
    else ip

let unmapped = function
  | Unix.ADDR_INET (ip, port) as a ->
      let v4 = unmapped_inet ip in
      if v4 == ip then a else Unix.ADDR_INET (v4, port)
  | Unix.ADDR_UNIX _ as a -> a

let is_loopback = function
  | Unix.ADDR_INET (ip, _) ->
      let ip = unmapped_inet ip in
      ip = Unix.inet6_addr_loopback
      || (not (Unix.is_inet6_addr ip))
         && String.starts_with ~prefix:"127." (Unix.string_of_inet_addr ip)
  | Unix.ADDR_UNIX _ -> true
