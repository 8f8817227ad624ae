(* log_tail: follow a log file and run a command for each matching line.

     dune exec -- examples/log_tail/log_tail.exe /var/log/app.log \
       --match ERROR --command 'mail -s alert ops' \
       --collector localhost:9999 --output alerts.jsonl
     dune exec -- examples/log_tail/log_tail.exe --self-test

   Each event's one-line JSON summary goes by UDP to the collector and is
   appended to the output file. The program is in service.ml; the end-to-end
   check that [make test] runs is in self_test.ml. *)

(* "host:port", "[::1]:port" or "::1:port": the port follows the last colon. *)
let host_port =
  let parse s =
    match String.rindex_opt s ':' with
    | None -> Error (`Msg "expected HOST:PORT")
    | Some i -> (
        let host = String.sub s 0 i in
        let host =
          if
            String.length host >= 2
            && host.[0] = '['
            && host.[String.length host - 1] = ']'
          then String.sub host 1 (String.length host - 2)
          else host
        in
        match
          int_of_string_opt (String.sub s (i + 1) (String.length s - i - 1))
        with
        | Some port when port >= 0 && port <= 65535 && host <> "" ->
            Ok (host, port)
        | _ -> Error (`Msg ("bad HOST:PORT " ^ s)))
  in
  let print ppf (host, port) =
    if String.contains host ':' then Format.fprintf ppf "[%s]:%d" host port
    else Format.fprintf ppf "%s:%d" host port
  in
  Cmdliner.Arg.conv ~docv:"HOST:PORT" (parse, print)

let fail message =
  prerr_endline ("log_tail: " ^ message);
  `Ok 1

let main log pattern command collector output jobs timeout poll from_start
    exit_after self_test =
  if self_test then `Ok (if Self_test.run () then 0 else 1)
  else
    match (log, command) with
    | None, _ -> `Error (true, "the LOG file to follow is required")
    | _, None -> `Error (true, "--command is required")
    | Some log, Some command -> (
        let config =
          Service.
            {
              log;
              pattern;
              command;
              collector;
              output;
              jobs;
              timeout;
              poll;
              from_start;
              exit_after;
            }
        in
        match Braid_io.run (fun () -> Service.run config) with
        | () -> `Ok 0
        | exception Braid_io.Net.Unknown_host host ->
            fail ("unknown collector host " ^ host)
        | exception (Braid_io.Io_error _ as e) ->
            fail (Option.get (Braid_io.error_message e)))

let () =
  let open Cmdliner in
  let positive conv zero =
    let parse s =
      match Arg.conv_parser conv s with
      | Ok v when v > zero -> Ok v
      | Ok _ -> Error (`Msg ("must be positive: " ^ s))
      | Error _ as e -> e
    in
    Arg.conv (parse, Arg.conv_printer conv)
  in
  let log =
    Arg.(
      value
      & pos 0 (some string) None
      & info [] ~docv:"LOG"
          ~doc:"The log file to follow (it need not exist yet).")
  in
  let pattern =
    Arg.(
      value & opt string ""
      & info [ "m"; "match" ] ~docv:"TEXT"
          ~doc:"Only lines containing $(docv) are events (default: every line).")
  in
  let command =
    Arg.(
      value
      & opt (some string) None
      & info [ "c"; "command" ] ~docv:"CMD"
          ~doc:
            "Shell command run for each event, with the line on its standard \
             input.")
  in
  let collector =
    Arg.(
      value
      & opt (some host_port) None
      & info [ "collector" ] ~docv:"HOST:PORT"
          ~doc:
            "Send each summary as a UDP datagram to $(docv) (a name is \
             resolved once, at start).")
  in
  let output =
    Arg.(
      value & opt string "-"
      & info [ "o"; "output" ] ~docv:"FILE"
          ~doc:"Append each summary to $(docv) (- for standard output).")
  in
  let jobs =
    Arg.(
      value
      & opt (positive int 0) 4
      & info [ "j"; "jobs" ] ~docv:"N" ~doc:"Commands running at once, at most.")
  in
  let timeout =
    Arg.(
      value
      & opt (positive float 0.) 10.
      & info [ "timeout" ] ~docv:"SECONDS"
          ~doc:"Kill a command still running after $(docv).")
  in
  let poll =
    Arg.(
      value
      & opt (positive float 0.) 0.25
      & info [ "poll" ] ~docv:"SECONDS"
          ~doc:"Look at an idle log every $(docv).")
  in
  let from_start =
    Arg.(
      value & flag
      & info [ "from-start" ]
          ~doc:
            "Also read what the log holds now (by default, only lines added \
             from now on).")
  in
  let exit_after =
    Arg.(
      value
      & opt (some (positive int 0)) None
      & info [ "exit-after" ] ~docv:"N" ~doc:"Stop after $(docv) events.")
  in
  let self_test =
    Arg.(
      value & flag
      & info [ "self-test" ]
          ~doc:
            "Run the service on a temporary directory against a collector of \
             its own, check the events, and exit 0 if they are right.")
  in
  let term =
    Term.(
      ret
        (const main $ log $ pattern $ command $ collector $ output $ jobs
       $ timeout $ poll $ from_start $ exit_after $ self_test))
  in
  let info =
    Cmd.info "log_tail"
      ~doc:"follow a log file and run a command for each matching line"
  in
  exit (Cmd.eval' (Cmd.v info term))
