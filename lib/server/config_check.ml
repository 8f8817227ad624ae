let check (c : Config.t) =
  let positive name n =
    if n > 0 then Ok () else Error (Printf.sprintf "%s must be positive" name)
  in
  let ( let* ) = Result.bind in
  let* () = positive "input buffer size" c.input_buffer in
  let* () = positive "output buffer size" c.output_buffer in
  let* () = positive "maximum request line" c.limits.max_request_line in
  let* () = positive "maximum header size" c.limits.max_header_bytes in
  let* () = positive "maximum header fields" c.limits.max_header_fields in
  let* () =
    if c.limits.max_body >= 0 then Ok ()
    else Error "maximum body size must not be negative"
  in
  let* () = positive "maximum connections" c.max_connections in
  let* () = positive "minor heap words" c.minor_heap_words in
  let* () =
    match c.max_connections_per_client with
    | Cap n | Cap_except_loopback n ->
        positive "maximum connections per client" n
    | No_cap -> Ok ()
  in
  let* () =
    if c.domains >= 1 then Ok ()
    else Error "the number of domains must be at least 1"
  in
  let seconds ?(zero = false) name x =
    if Float.is_nan x || x < 0. || ((not zero) && x = 0.) then
      Error
        (Printf.sprintf "%s must be a %s number of seconds" name
           (if zero then "non-negative" else "positive"))
    else if x > Config.max_seconds then
      Error
        (Printf.sprintf "%s must be at most %.0f seconds (365 days), not %.12g"
           name Config.max_seconds x)
    else Ok ()
  in
  let* () = seconds ~zero:true "linger time" c.linger in
  let* () = seconds "request header timeout" c.timeouts.request_header in
  let* () = seconds "keep-alive timeout" c.timeouts.keep_alive in
  let* () = seconds "body timeout" c.timeouts.body in
  let* () = seconds "send timeout" c.timeouts.send in
  let* () =
    match c.timeouts.handler with
    | None -> Ok ()
    | Some x -> seconds "handler timeout" x
  in
  let* () =
    if c.index <> "" && not (String.contains c.index '/') then Ok ()
    else Error "the index file must be a plain file name"
  in
  let endpoint name = function
    | Some p when not (Config.endpoint_path p) ->
        Error (Printf.sprintf "%s: %S is not a path like /%s" name p name)
    | _ -> Ok ()
  in
  let* () = endpoint "metrics" c.metrics_path in
  let* () = endpoint "health" c.health_path in
  let* () =
    if c.body_buffer >= 0 then Ok ()
    else Error "the body buffer size must not be negative"
  in
  let* () =
    match c.spool_budget with
    | Some n when n < 0 -> Error "the body spool budget must not be negative"
    | _ -> Ok ()
  in
  let* () =
    match (Unix.stat c.body_temp_dir).st_kind with
    | S_DIR -> Ok ()
    | _ ->
        Error
          (Printf.sprintf "body temporary directory %s is not a directory"
             c.body_temp_dir)
    | exception Unix.Unix_error (e, _, _) ->
        Error
          (Printf.sprintf "body temporary directory %s: %s" c.body_temp_dir
             (Unix.error_message e))
  in
  let* () =
    match c.tls with
    | Some { certificates = []; _ } ->
        Error "HTTPS needs at least one certificate and its key"
    | Some { certificates; _ } -> (
        match
          List.find_opt
            (fun (c : Braid_tls.Server_context.certificate) ->
              c.chain = "" || c.key = "")
            certificates
        with
        | Some { chain = ""; key } ->
            Error (Printf.sprintf "the TLS key %s has no certificate" key)
        | Some { chain; _ } ->
            Error (Printf.sprintf "the TLS certificate %s has no key" chain)
        | None -> Ok ())
    | None -> Ok ()
  in
  let* () =
    let h = c.http2 in
    let* () =
      positive "HTTP/2 maximum concurrent streams" h.max_concurrent_streams
    in
    let* () = positive "HTTP/2 control frame budget" h.control_frame_budget in
    let* () = positive "HTTP/2 reset budget" h.reset_budget in
    let* () =
      positive "HTTP/2 maximum header list size" h.max_header_list_size
    in
    let window name n =
      if n >= 1 && n <= 0x7fff_ffff then Ok ()
      else Error (Printf.sprintf "%s must be from 1 to 2147483647" name)
    in
    let* () = window "HTTP/2 stream window" h.stream_window in
    let* () = window "HTTP/2 connection window" h.connection_window in
    if h.max_frame_size >= 16_384 && h.max_frame_size <= 16_777_215 then Ok ()
    else Error "HTTP/2 maximum frame size must be from 16384 to 16777215"
  in
  match c.root with
  | None -> Ok c
  | Some root -> (
      match Unix.realpath root with
      | exception Unix.Unix_error (e, _, _) ->
          Error (Printf.sprintf "root %s: %s" root (Unix.error_message e))
      | real -> (
          match (Unix.stat real).st_kind with
          | S_DIR -> Ok { c with root = Some real }
          | _ -> Error (Printf.sprintf "root %s is not a directory" root)
          | exception Unix.Unix_error (e, _, _) ->
              Error (Printf.sprintf "root %s: %s" root (Unix.error_message e))))

let load_certificates (c : Config.t) =
  match c.tls with
  | None -> Ok None
  | Some tls ->
      Result.map Option.some
        (Braid_tls.Server_context.load ~http2:c.http2.enabled tls.certificates)
