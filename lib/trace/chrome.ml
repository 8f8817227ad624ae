(* The Chrome trace-event JSON format ("JSON Object Format"), which Perfetto,
   chrome://tracing and speedscope open. One process; one thread per domain
   (the ring index); microsecond timestamps, relative to the first event. *)

let escape b s =
  String.iter
    (function
      | '"' -> Buffer.add_string b "\\\""
      | '\\' -> Buffer.add_string b "\\\\"
      | c when Char.code c < 0x20 ->
          Buffer.add_string b (Printf.sprintf "\\u%04x" (Char.code c))
      | c -> Buffer.add_char b c)
    s

type arg = Int of int | Str of string

let add_args b args =
  Buffer.add_string b ",\"args\":{";
  List.iteri
    (fun i (k, v) ->
      if i > 0 then Buffer.add_char b ',';
      Buffer.add_char b '"';
      escape b k;
      Buffer.add_string b "\":";
      match v with
      | Int n -> Buffer.add_string b (string_of_int n)
      | Str s ->
          Buffer.add_char b '"';
          escape b s;
          Buffer.add_char b '"')
    args;
  Buffer.add_char b '}'

let waiting_on_name : Probe.waiting_on -> string = function
  | Structure -> "structure"
  | Descriptor -> "descriptor"
  | Timer -> "timer"
  | Join -> "join"

(* Which request a fiber works for: its own while it serves one, else the
   one its parent (or its pool task's submitter) worked for when it was
   created. *)
type fibers = { requests : (int, string) Hashtbl.t }

let request_of fibers fiber = Hashtbl.find_opt fibers.requests fiber

let write_buffer b (events : Event.t list) =
  let origin =
    match List.find_opt (fun (e : Event.t) -> e.time_ns > 0) events with
    | Some e -> e.time_ns
    | None -> 0
  in
  let us ns = float_of_int (max 0 (ns - origin)) /. 1000. in
  let first = ref true in
  let record ~ph ~name ~cat ~tid ?id ?dur ~ts args =
    if !first then first := false else Buffer.add_string b ",\n";
    Buffer.add_string b "{\"ph\":\"";
    Buffer.add_string b ph;
    Buffer.add_string b "\",\"name\":\"";
    escape b name;
    Buffer.add_string b "\",\"cat\":\"";
    Buffer.add_string b cat;
    Buffer.add_string b "\",\"pid\":1,\"tid\":";
    Buffer.add_string b (string_of_int tid);
    Printf.bprintf b ",\"ts\":%.3f" ts;
    Option.iter (fun d -> Printf.bprintf b ",\"dur\":%.3f" d) dur;
    Option.iter
      (fun id ->
        Buffer.add_string b ",\"id\":\"";
        escape b id;
        Buffer.add_char b '"')
      id;
    if ph = "i" then Buffer.add_string b ",\"s\":\"t\"";
    add_args b args;
    Buffer.add_char b '}'
  in
  let fibers = { requests = Hashtbl.create 64 } in
  let running =
    Hashtbl.create 8
    (* domain -> fiber, since *)
  in
  let waiting =
    Hashtbl.create 8
    (* domain -> timeout, since *)
  in
  let requests =
    Hashtbl.create 64
    (* fiber -> request id, name, since *)
  in
  let domains = Hashtbl.create 8 in
  let end_stretch domain ~at ~then_ =
    match Hashtbl.find_opt running domain with
    | None -> ()
    | Some (fiber, since) ->
        Hashtbl.remove running domain;
        let request =
          match request_of fibers fiber with
          | Some r -> [ ("request", Str r) ]
          | None -> []
        in
        record ~ph:"X"
          ~name:(Printf.sprintf "fiber %d" fiber)
          ~cat:"fiber" ~tid:domain ~ts:(us since)
          ~dur:(us at -. us since)
          ((("fiber", Int fiber) :: request) @ then_)
  in
  List.iter
    (fun (e : Event.t) ->
      Hashtbl.replace domains e.domain ();
      let ts = us e.time_ns and tid = e.domain in
      let instant name cat args = record ~ph:"i" ~name ~cat ~tid ~ts args in
      match e.what with
      | Fiber_created { child; parent } ->
          Option.iter
            (Hashtbl.replace fibers.requests child)
            (request_of fibers parent);
          instant "create" "fiber"
            [ ("fiber", Int child); ("parent", Int parent) ]
      | Fiber_running fiber ->
          end_stretch tid ~at:e.time_ns ~then_:[ ("then", Str "preempted") ];
          Hashtbl.replace running tid (fiber, e.time_ns)
      | Fiber_suspended { fiber; on; detail } ->
          let on_what =
            match on with
            | Descriptor -> Printf.sprintf "descriptor %d" detail
            | Timer ->
                Printf.sprintf "timer (%.3f ms)"
                  (float_of_int (detail - e.time_ns) /. 1e6)
            | Join -> Printf.sprintf "join fiber %d" detail
            | Structure -> "structure"
          in
          end_stretch tid ~at:e.time_ns
            ~then_:[ ("then", Str ("waits on " ^ on_what)) ];
          instant "suspend" "fiber"
            [
              ("fiber", Int fiber);
              ("on", Str (waiting_on_name on));
              ("detail", Int detail);
            ]
      | Fiber_cancelled fiber ->
          instant "cancel" "fiber" [ ("fiber", Int fiber) ]
      | Fiber_finished fiber ->
          end_stretch tid ~at:e.time_ns ~then_:[ ("then", Str "finished") ];
          instant "finish" "fiber" [ ("fiber", Int fiber) ]
      | Switch_opened { switch; fiber } ->
          record ~ph:"b" ~name:"switch" ~cat:"switch" ~tid ~ts
            ~id:(Printf.sprintf "switch-%d" switch)
            [ ("switch", Int switch); ("fiber", Int fiber) ]
      | Switch_closed switch ->
          record ~ph:"e" ~name:"switch" ~cat:"switch" ~tid ~ts
            ~id:(Printf.sprintf "switch-%d" switch)
            [ ("switch", Int switch) ]
      | Pool_submitted { task; submitter } ->
          Option.iter
            (Hashtbl.replace fibers.requests task)
            (request_of fibers submitter);
          instant "submit" "pool"
            [ ("task", Int task); ("submitter", Int submitter) ]
      | Pool_stolen { thief; victim } ->
          instant "steal" "pool"
            [ ("thief", Int thief); ("victim", Int victim) ]
      | Pool_running task -> instant "run task" "pool" [ ("task", Int task) ]
      | Loop_waiting { timeout_ms } ->
          Hashtbl.replace waiting tid (timeout_ms, e.time_ns)
      | Loop_woken { events } -> (
          match Hashtbl.find_opt waiting tid with
          | None -> ()
          | Some (timeout_ms, since) ->
              Hashtbl.remove waiting tid;
              record ~ph:"X" ~name:"wait" ~cat:"loop" ~tid ~ts:(us since)
                ~dur:(ts -. us since)
                [ ("timeout_ms", Int timeout_ms); ("events", Int events) ])
      | Http_began { fiber; meth; path; request_id } ->
          Hashtbl.replace fibers.requests fiber request_id;
          Hashtbl.replace requests fiber
            (request_id, meth ^ " " ^ path, e.time_ns)
      | Http_ended { fiber; status; bytes } -> (
          match Hashtbl.find_opt requests fiber with
          | None -> ()
          | Some (request_id, name, since) ->
              Hashtbl.remove requests fiber;
              Hashtbl.remove fibers.requests fiber;
              let args =
                [
                  ("request", Str request_id);
                  ("status", Int status);
                  ("bytes", Int bytes);
                ]
              in
              record ~ph:"b" ~name ~cat:"request" ~tid ~ts:(us since)
                ~id:request_id args;
              record ~ph:"e" ~name ~cat:"request" ~tid ~ts ~id:request_id args)
      | Gc_began phase -> record ~ph:"B" ~name:phase ~cat:"gc" ~tid ~ts []
      | Gc_ended phase -> record ~ph:"E" ~name:phase ~cat:"gc" ~tid ~ts []
      | Lost n -> instant "lost events" "trace" [ ("count", Int n) ])
    events;
  let last = List.fold_left (fun m (e : Event.t) -> max m e.time_ns) 0 events in
  Hashtbl.iter
    (fun domain _ ->
      end_stretch domain ~at:last ~then_:[ ("then", Str "trace ended") ])
    (Hashtbl.copy running);
  Hashtbl.iter
    (fun domain () ->
      record ~ph:"M" ~name:"thread_name" ~cat:"meta" ~tid:domain ~ts:0.
        [ ("name", Str (Printf.sprintf "domain %d" domain)) ])
    domains

let write oc events =
  let b = Buffer.create 65536 in
  Buffer.add_string b "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  write_buffer b events;
  Buffer.add_string b "\n]}\n";
  Buffer.output_buffer oc b

let to_file path events =
  let oc = open_out_bin path in
  Fun.protect ~finally:(fun () -> close_out oc) (fun () -> write oc events)
