module Probe = Probe
module Event = Event
module Recorder = Recorder
module Chrome = Chrome

let record_in_process file =
  Probe.enable ();
  let recorder = Recorder.of_self () in
  let lock = Mutex.create () in
  let stop = Atomic.make false in
  let poll () =
    Mutex.protect lock (fun () -> ignore (Recorder.poll recorder))
  in
  (* A ring holds 2^16 words per domain by default: at tens of thousands of
     events a second it must be read every few milliseconds, or it wraps. *)
  let reader =
    Thread.create
      (fun () ->
        while not (Atomic.get stop) do
          Thread.delay 0.005;
          poll ()
        done)
      ()
  in
  at_exit (fun () ->
      Atomic.set stop true;
      Thread.join reader;
      poll ();
      let events = Recorder.events recorder in
      Recorder.close recorder;
      Probe.disable ();
      try Chrome.to_file file events
      with Sys_error msg -> prerr_endline ("braid: trace: " ^ msg))

let started = Atomic.make false

let start_from_environment () =
  if not (Atomic.exchange started true) then
    match Sys.getenv_opt "BRAID_TRACE" with
    | Some file when file <> "" -> record_in_process file
    | Some _ | None -> (
        match Sys.getenv_opt "BRAID_TRACE_EVENTS" with
        | Some "1" -> Probe.enable ()
        | Some _ | None -> ())
