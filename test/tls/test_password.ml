(* Braid_tls.Password: RFC 9106's Argon2id vector, the reference
   implementation's PHC string, the openssl command as an independent
   caller of the KDF, and what verify must refuse. *)

open Braid
module P = Braid_tls.Password

let hex s =
  String.concat ""
    (List.map
       (fun c -> Printf.sprintf "%02x" (Char.code c))
       (List.of_seq (String.to_seq s)))

let check_bool = Alcotest.(check bool)
let check_string = Alcotest.(check string)

(* RFC 9106 §5.3: Argon2id with secret and associated data. *)
let rfc9106 () =
  let tag =
    P.derive ~secret:(String.make 8 '\x03') ~ad:(String.make 12 '\x04')
      { memory_kib = 32; iterations = 3; parallelism = 4 }
      ~salt:(String.make 16 '\x02') ~length:32 (String.make 32 '\x01')
  in
  check_string "tag"
    "0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659" (hex tag)

(* The reference implementation's test.c (phc-winner-argon2), argon2id. *)
let reference =
  "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"

let reference_phc () =
  check_bool "verifies" true (P.verify "password" ~hash:reference);
  check_bool "wrong password" false (P.verify "Password" ~hash:reference);
  Alcotest.(
    check
      (result (of_pp (fun ppf _ -> Format.pp_print_string ppf "params")) string))
    "params"
    (Ok { P.memory_kib = 65536; iterations = 2; parallelism = 1 })
    (P.params_of_hash reference)

let openssl_cli () =
  let h = P.hash "hunter2" in
  let salt, mine =
    match String.split_on_char '$' h with
    | [ ""; "argon2id"; "v=19"; "m=19456,t=2,p=1"; salt; hash ] ->
        (Base64.decode_exn ~pad:false salt, Base64.decode_exn ~pad:false hash)
    | _ -> Alcotest.failf "not a PHC string: %s" h
  in
  Alcotest.(check int) "16-byte salt" 16 (String.length salt);
  let ic =
    Unix.open_process_args_in "openssl"
      [|
        "openssl";
        "kdf";
        "-keylen";
        "32";
        "-kdfopt";
        "pass:hunter2";
        "-kdfopt";
        "hexsalt:" ^ hex salt;
        "-kdfopt";
        "iter:2";
        "-kdfopt";
        "memcost:19456";
        "-kdfopt";
        "lanes:1";
        "ARGON2ID";
      |]
  in
  let out = In_channel.input_all ic in
  ignore (Unix.close_process_in ic);
  let theirs =
    String.lowercase_ascii
      (String.concat "" (String.split_on_char ':' (String.trim out)))
  in
  check_string "openssl kdf agrees" theirs (hex mine)

let round_trip () =
  let h = P.hash "correct horse" in
  check_bool "right" true (P.verify "correct horse" ~hash:h);
  check_bool "wrong" false (P.verify "correct horsE" ~hash:h);
  check_bool "empty" false (P.verify "" ~hash:h);
  check_bool "fresh salt" false (h = P.hash "correct horse");
  let e = P.hash "" in
  check_bool "empty password" true (P.verify "" ~hash:e);
  let nul = P.hash "a\000b" in
  check_bool "NUL counts" false (P.verify "a" ~hash:nul);
  check_bool "NUL round trip" true (P.verify "a\000b" ~hash:nul)

let tampered () =
  let h =
    P.hash ~params:{ memory_kib = 64; iterations = 1; parallelism = 1 } "pw"
  in
  check_bool "cheap params verify" true (P.verify "pw" ~hash:h);
  (* Every character changed in turn: refused, or (for the parameters)
     a different hash. *)
  String.iteri
    (fun i c ->
      let b = Bytes.of_string h in
      Bytes.set b i (if c = 'A' then 'B' else 'A');
      if P.verify "pw" ~hash:(Bytes.to_string b) then
        Alcotest.failf "character %d changed: accepted" i)
    h;
  List.iter
    (fun (what, s) ->
      check_bool what false (P.verify "password" ~hash:s);
      match P.params_of_hash s with
      | Ok _ -> Alcotest.failf "%s: parsed" what
      | Error _ -> ())
    [
      ("empty", "");
      ( "argon2i",
        "$argon2i$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
      );
      ( "version 16",
        "$argon2id$v=16$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
      );
      ( "no version",
        "$argon2id$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
      );
      ( "a terabyte",
        "$argon2id$v=19$m=1073741824,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
      );
      ( "t=0",
        "$argon2id$v=19$m=65536,t=0,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
      );
      ( "p=0",
        "$argon2id$v=19$m=65536,t=2,p=0$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
      );
      ( "leading zero",
        "$argon2id$v=19$m=065536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
      );
      ( "order",
        "$argon2id$v=19$t=2,m=65536,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
      );
      ( "padded salt",
        "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ=$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
      );
      ( "short salt",
        "$argon2id$v=19$m=65536,t=2,p=1$c29tZQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
      );
      ( "short hash",
        "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMa" );
      ("trailing", reference ^ "$");
    ];
  List.iter
    (fun (what, params) ->
      match P.hash ~params "x" with
      | _ -> Alcotest.failf "%s accepted" what
      | exception Invalid_argument _ -> ())
    [
      ("m < 8p", { P.memory_kib = 7; iterations = 1; parallelism = 1 });
      ("t = 0", { P.memory_kib = 64; iterations = 0; parallelism = 1 });
      ("p = 256", { P.memory_kib = 4096; iterations = 1; parallelism = 256 });
    ]

let rehash () =
  check_bool "default: no" false (P.needs_rehash (P.hash "x"));
  check_bool "reference: yes" true (P.needs_rehash reference);
  check_bool "garbage: yes" true (P.needs_rehash "nope");
  check_bool "its own params: no" false
    (P.needs_rehash
       ~params:{ memory_kib = 65536; iterations = 2; parallelism = 1 }
       reference)

(* On the event loop, hash_on_pool leaves the loop free: a fiber ticking
   every millisecond keeps ticking while four hashes run. *)
let off_the_loop () =
  Braid_io.run @@ fun () ->
  let ticks = ref 0 and stop = ref false in
  Switch.run @@ fun sw ->
  let _ : unit Fiber.handle =
    Fiber.fork ~sw (fun () ->
        while not !stop do
          Braid_io.Time.sleep 0.001;
          incr ticks
        done)
  in
  let t0 = Unix.gettimeofday () in
  let hashes = List.init 4 (fun i -> P.hash_on_pool (string_of_int i)) in
  let elapsed = Unix.gettimeofday () -. t0 in
  stop := true;
  check_bool "verify_on_pool" true
    (P.verify_on_pool "2" ~hash:(List.nth hashes 2));
  (* At least a third of the possible ticks: a stalled loop would show 0. *)
  if float !ticks < elapsed /. 0.001 /. 3. then
    Alcotest.failf "%d ticks in %.0f ms: the loop was stalled" !ticks
      (elapsed *. 1000.)

let () =
  Alcotest.run "password"
    [
      ( "known answers",
        [
          Alcotest.test_case "RFC 9106" `Quick rfc9106;
          Alcotest.test_case "reference PHC string" `Quick reference_phc;
          Alcotest.test_case "openssl kdf" `Quick openssl_cli;
        ] );
      ( "hash and verify",
        [
          Alcotest.test_case "round trip" `Quick round_trip;
          Alcotest.test_case "tampered and malformed" `Quick tampered;
          Alcotest.test_case "needs_rehash" `Quick rehash;
          Alcotest.test_case "off the loop" `Quick off_the_loop;
        ] );
    ]
