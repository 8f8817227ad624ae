let start ?(seconds = 300.) name =
  ignore
    (Thread.create
       (fun () ->
         Thread.delay seconds;
         Printf.eprintf
           "%s: still running after %.0f s: deadlock or lost wake-up\n%!" name
           seconds;
         exit 2)
       ())
