(* Dev_certificate: the certificate verifies as its own trust anchor with the
   openssl command, holds the names as subjectAltName, its key is 0600, it is
   kept while valid and made anew when it expires or the names change. *)

module Dev = Braid_tls.Dev_certificate

let temp_dir () = Filename.temp_dir "braid-dev-cert" ""

let run command =
  let ic = Unix.open_process_in (command ^ " 2>&1") in
  let out = In_channel.input_all ic in
  match Unix.close_process_in ic with
  | WEXITED 0 -> out
  | _ -> Alcotest.failf "%s failed:\n%s" command out

let ensure ?names ?now dir =
  match Dev.ensure ?names ?now ~dir () with
  | Ok t -> t
  | Error msg -> Alcotest.fail msg

let contains s sub =
  let n = String.length s and m = String.length sub in
  let rec go i = i + m <= n && (String.sub s i m = sub || go (i + 1)) in
  go 0

let test_verifies () =
  let dir = Filename.concat (temp_dir ()) "nested/state" in
  let t = ensure dir in
  Alcotest.(check bool) "created" true t.created;
  let q = Filename.quote t.certificate in
  let out = run (Printf.sprintf "openssl verify -CAfile %s %s" q q) in
  Alcotest.(check bool) "verify OK" true (contains out ": OK");
  let text = run ("openssl x509 -noout -text -in " ^ q) in
  List.iter
    (fun piece -> Alcotest.(check bool) piece true (contains text piece))
    [
      "DNS:localhost";
      "IP Address:127.0.0.1";
      "IP Address:0:0:0:0:0:0:0:1";
      "prime256v1";
      "CA:FALSE";
      "TLS Web Server Authentication";
    ];
  (* The key is the certificate's. *)
  let pub_of cmd = run cmd in
  Alcotest.(check string)
    "key matches"
    (pub_of ("openssl x509 -noout -pubkey -in " ^ q))
    (pub_of ("openssl pkey -pubout -in " ^ Filename.quote t.key));
  Alcotest.(check int) "key 0600" 0o600 (Unix.stat t.key).st_perm;
  Alcotest.(check int) "dir 0700" 0o700 (Unix.stat dir).st_perm;
  let days = (t.not_after -. Unix.gettimeofday ()) /. 86400. in
  Alcotest.(check bool) "about 30 days" true (days > 29.9 && days <= 30.)

let test_kept_then_renewed () =
  let dir = temp_dir () in
  let first = ensure dir in
  let pem () =
    In_channel.with_open_bin first.certificate In_channel.input_all
  in
  let original = pem () in
  let again = ensure dir in
  Alcotest.(check bool) "kept" false again.created;
  Alcotest.(check string) "same file" original (pem ());
  (* Less than a day left 29.5 days on: made anew. *)
  let later = Unix.gettimeofday () +. (29.5 *. 86400.) in
  let renewed = ensure ~now:later dir in
  Alcotest.(check bool) "renewed near expiry" true renewed.created;
  Alcotest.(check bool) "new file" true (pem () <> original);
  Alcotest.(check bool)
    "valid from then" true
    (renewed.not_after > later +. (29. *. 86400.));
  let names = [ "localhost"; "app.test" ] in
  let renamed = ensure ~names ~now:later dir in
  Alcotest.(check bool) "renewed for new names" true renamed.created;
  let text =
    run
      ("openssl x509 -noout -ext subjectAltName -in "
      ^ Filename.quote renamed.certificate)
  in
  Alcotest.(check bool) "new name" true (contains text "DNS:app.test");
  Alcotest.(check bool) "old address gone" false (contains text "127.0.0.1");
  Alcotest.(check bool)
    "names in another order: kept" false
    (ensure ~names:[ "app.test"; "localhost" ] ~now:later dir).created;
  Unix.chmod renamed.key 0o644;
  let reissued = ensure ~names ~now:later dir in
  Alcotest.(check bool) "a readable key is replaced" true reissued.created;
  Alcotest.(check int) "0600 again" 0o600 (Unix.stat reissued.key).st_perm

let test_errors () =
  let dir = temp_dir () in
  Alcotest.(check bool)
    "no names" true
    (Result.is_error (Dev.ensure ~names:[] ~dir ()));
  Alcotest.(check bool)
    "comma" true
    (Result.is_error (Dev.ensure ~names:[ "a,DNS:evil" ] ~dir ()));
  Alcotest.(check bool)
    "unwritable" true
    (Result.is_error (Dev.ensure ~dir:"/proc/braid-cannot-be-here" ()))

let () =
  Alcotest.run "dev certificate"
    [
      ( "dev certificate",
        [
          Alcotest.test_case "verifies, names, key mode" `Quick test_verifies;
          Alcotest.test_case "kept, renewed" `Quick test_kept_then_renewed;
          Alcotest.test_case "errors" `Quick test_errors;
        ] );
    ]
