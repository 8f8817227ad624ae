(* braid serve --dev: HTTPS with the development certificate, which it makes
   in $XDG_STATE_HOME on first use and prints; curl trusts that file alone
   (--cacert) for 127.0.0.1 and localhost. *)

open Text_and_process

let binary = "../../bin/main.exe"

let wait_until what p =
  let deadline = Unix.gettimeofday () +. 20. in
  while not (p ()) do
    if Unix.gettimeofday () > deadline then Alcotest.failf "timed out: %s" what;
    Unix.sleepf 0.02
  done

(* The rest of the first line of [text] that starts with [prefix]. *)
let after prefix text =
  List.find_map
    (fun line ->
      if String.starts_with ~prefix line then
        Some
          (String.sub line (String.length prefix)
             (String.length line - String.length prefix))
      else None)
    (String.split_on_char '\n' text)

let curl args =
  let ic =
    Unix.open_process_args_in "curl"
      (Array.of_list ("curl" :: "-sS" :: "--max-time" :: "10" :: args))
  in
  let out = In_channel.input_all ic in
  (Unix.close_process_in ic, out)

let test_dev () =
  let dir = Unix.realpath (Filename.temp_dir "braid-dev" "") in
  let root = dir ^ "/www" and state = dir ^ "/state" in
  Unix.mkdir root 0o755;
  write_file (root ^ "/index.html") "served over TLS\n";
  let out = dir ^ "/stdout" and err = dir ^ "/stderr" in
  let fd path = Unix.openfile path [ O_WRONLY; O_TRUNC; O_CREAT ] 0o600 in
  let out_fd = fd out and err_fd = fd err in
  let null = Unix.openfile "/dev/null" [ O_RDONLY ] 0 in
  let env =
    Array.append
      [| "XDG_STATE_HOME=" ^ state |]
      (Array.of_list
         (List.filter
            (fun v -> not (String.starts_with ~prefix:"XDG_STATE_HOME=" v))
            (Array.to_list (Unix.environment ()))))
  in
  let pid =
    Unix.create_process_env binary
      [|
        binary;
        "serve";
        "--dev";
        "--port";
        "0";
        "--tls-port";
        "0";
        "--root";
        root;
      |]
      env null out_fd err_fd
  in
  List.iter Unix.close [ out_fd; err_fd; null ];
  let stop () =
    (try Unix.kill pid Sys.sigterm with Unix.Unix_error _ -> ());
    ignore (waitpid pid)
  in
  Fun.protect ~finally:stop (fun () ->
      wait_until "the HTTPS banner" (fun () ->
          (match Unix.waitpid [ WNOHANG ] pid with
          | 0, _ -> ()
          | _ -> Alcotest.failf "braid exited: %s" (read_if_exists err));
          after "braid: serving https://127.0.0.1:" (read_if_exists out) <> None);
      let text = read_file out in
      let cert =
        match after "braid: development certificate " text with
        | Some rest -> List.hd (String.split_on_char ' ' rest)
        | None -> Alcotest.failf "no certificate printed: %s" text
      in
      Alcotest.(check string)
        "in the state directory"
        (state ^ "/braid/dev-certificate/cert.pem")
        cert;
      Alcotest.(check int)
        "key 0600" 0o600
        (Unix.stat (Filename.concat (Filename.dirname cert) "key.pem")).st_perm;
      let port =
        Scanf.sscanf
          (Option.get (after "braid: serving https://127.0.0.1:" text))
          "%d/" Fun.id
      in
      List.iter
        (fun host ->
          let status, body =
            curl [ "--cacert"; cert; Printf.sprintf "https://%s:%d/" host port ]
          in
          Alcotest.(check bool)
            (host ^ ": curl exit 0") true (status = WEXITED 0);
          Alcotest.(check string) (host ^ ": body") "served over TLS\n" body)
        [ "127.0.0.1"; "localhost" ];
      (* Without the certificate, curl refuses the server: it is trusted
         only as that file. *)
      let status, _ = curl [ Printf.sprintf "https://127.0.0.1:%d/" port ] in
      Alcotest.(check bool)
        "untrusted without --cacert" true (status <> WEXITED 0))

let () =
  Alcotest.run "serve --dev"
    [
      ("dev", [ Alcotest.test_case "HTTPS with curl --cacert" `Quick test_dev ]);
    ]
