(* Format is TyXML's only printing interface; a formatter over a buffer
   keeps the document in one string instead of a string per node. Without
   indentation the printer emits no break hint, so Format's margin never
   cuts a line inside the text. *)
let print printer value =
  let buffer = Buffer.create 4096 in
  let formatter = Format.formatter_of_buffer buffer in
  printer formatter value;
  Format.pp_print_flush formatter ();
  Buffer.contents buffer

let string_of_elt elt = print (Tyxml.Html.pp_elt ~indent:false ()) elt

let page ?status ?headers doc =
  Braid_web.Response.html ?status ?headers
    (print (Tyxml.Html.pp ~indent:false ()) doc)

let fragment ?status ?headers elt =
  Braid_web.Response.html ?status ?headers (string_of_elt elt)

let csrf_input request =
  Tyxml.Html.input
    ~a:
      Tyxml.Html.
        [
          a_input_type `Hidden;
          a_name Braid_web.Csrf.field_name;
          a_value (Braid_web.Csrf.token request);
        ]
    ()
