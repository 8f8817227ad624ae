(** An SVG timeline of a Braid trace (the Chrome JSON that {!Braid_trace.Chrome}
    writes): one lane per domain, each fiber's running stretches as bars (the
    gaps between them are its suspensions, and a bar's tooltip says what it
    waited on next), the loop's sleeps as thin lines, the runtime's GC phases
    shaded over the lanes, and the requests above them, labelled with method,
    path, status and duration. Pure: any domain.

    {[
      let trace =
        {|{"traceEvents":[
           {"ph":"X","name":"fiber 1","cat":"fiber","pid":1,"tid":0,
            "ts":0,"dur":50,"args":{"fiber":1}} ] }|}

      let () =
        match Braid_trace_render.svg_of_string trace with
        | Ok svg -> assert (String.starts_with ~prefix:"<svg" svg)
        | Error e -> failwith e
    ]} *)

val svg_of_string :
  ?width:int -> ?request:string -> string -> (string, string) result
(** [svg_of_string json] is the picture of the trace [json], [width] pixels wide
    (default 1200), or [Error] saying why [json] is not a trace. With [request]
    (a request id), only the time around that request is drawn (its length
    again, half before and half after); [Error] if the trace has no such
    request. *)

val svg_of_file :
  ?width:int -> ?request:string -> string -> (string, string) result
(** [svg_of_file path] is {!svg_of_string} of the file's contents; [Error] if it
    cannot be read. *)
