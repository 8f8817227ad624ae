open Braid_web
open Braid_http

let continue_line = "HTTP/1.1 100 Continue\r\n\r\n"

let body_for (c : Pipeline_state.t) (req : Request.t) limits ~source =
  let body =
    match req.body with
    | No_body -> Body.empty
    | Content_length _ | Chunked ->
        let continue =
          if req.expect_continue then
            Some (fun () -> Output.add_string c.out continue_line)
          else None
        in
        Body.create ~source c.input limits req.body ~continue
          ~in_memory:c.config.body_buffer ~temp_dir:c.config.body_temp_dir
          ~spool:c.services.spool
  in
  c.body <- body;
  body

type state = Consumed | Unread | Failed of Parse_error.t

let settle body =
  match Body.failure body with
  | Some e -> Failed e
  | None -> (
      if Body.is_finished body then Consumed
      else if Body.continue_pending body then Unread
      else match Body.drain body with Ok () -> Consumed | Error e -> Failed e)
