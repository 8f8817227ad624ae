open Braid_web
module Testing = Braid_server.Testing

let hostile = {|<img src=x onerror=alert(1)>&"'|}
let hostile_on_wire = {|&lt;img src=x onerror=alert(1)&gt;&amp;&quot;'|}

(* The page of a to-do list whose title, item and attribute a user chose. *)
let todo_page text =
  let open Tyxml.Html in
  html
    (head (title (txt text)) [])
    (body
       [
         ul ~a:[ a_id "items" ] [ li ~a:[ a_title text ] [ txt text ] ];
         form
           ~a:[ a_action "/add"; a_method `Post ]
           [ input ~a:[ a_name "title"; a_value text ] () ];
       ])

let serve route response = Router.(empty |> get route (fun _ -> response ()))

let contains ~sub s =
  let n = String.length sub in
  let rec at i =
    i + n <= String.length s && (String.sub s i n = sub || at (i + 1))
  in
  at 0

let count ~sub s =
  let n = String.length sub in
  let rec from i acc =
    if i + n > String.length s then acc
    else if String.sub s i n = sub then from (i + n) (acc + 1)
    else from (i + 1) acc
  in
  from 0 0

let content_type r = Testing.header r "content-type"

let test_page_escapes_on_the_wire () =
  let r =
    Testing.call
      (serve "/" (fun () -> Braid_tyxml.page (todo_page hostile)))
      "/"
  in
  Alcotest.(check int) "status" 200 r.status;
  Alcotest.(check (option string))
    "content type" (Some "text/html; charset=utf-8") (content_type r);
  Alcotest.(check bool)
    "starts with the doctype" true
    (String.starts_with ~prefix:"<!DOCTYPE html>" r.body);
  Alcotest.(check bool) "no img element" false (contains ~sub:"<img" r.body);
  (* The title, the item, the [title] attribute and the [value] attribute. *)
  Alcotest.(check int)
    "each occurrence escaped" 4
    (count ~sub:hostile_on_wire r.body);
  Alcotest.(check bool)
    "the item as text" true
    (contains ~sub:({|<li title="|} ^ hostile_on_wire ^ {|">|}) r.body)

let test_attribute_cannot_be_left () =
  let breakout = {|x" onmouseover="alert(1)|} in
  let r =
    Testing.call
      (serve "/" (fun () ->
           Braid_tyxml.fragment Tyxml.Html.(p ~a:[ a_title breakout ] [])))
      "/"
  in
  Alcotest.(check string)
    "the quote is an entity"
    {|<p title="x&quot; onmouseover=&quot;alert(1)"></p>|} r.body

let test_status_and_fields () =
  let r =
    Testing.call
      (serve "/" (fun () ->
           Braid_tyxml.page ~status:404
             ~headers:[ ("Cache-Control", "no-store") ]
             (todo_page "gone")))
      "/"
  in
  Alcotest.(check int) "status" 404 r.status;
  Alcotest.(check (option string))
    "field" (Some "no-store")
    (Testing.header r "cache-control");
  Alcotest.(check (option string))
    "content type" (Some "text/html; charset=utf-8") (content_type r)

let test_fragment () =
  let item = Tyxml.Html.(li [ txt hostile ]) in
  let r =
    Testing.call
      (serve "/item" (fun () -> Braid_tyxml.fragment ~status:201 item))
      "/item"
  in
  Alcotest.(check int) "status" 201 r.status;
  Alcotest.(check (option string))
    "content type" (Some "text/html; charset=utf-8") (content_type r);
  Alcotest.(check string)
    "the element alone, escaped"
    ("<li>" ^ hostile_on_wire ^ "</li>")
    r.body;
  Alcotest.(check string)
    "string_of_elt is the fragment's body" r.body
    (Braid_tyxml.string_of_elt item)

(* Far beyond Format's margin: a printer that indented or broke lines would
   change the text of the paragraph. *)
let test_long_text_unchanged () =
  let text = String.concat " " (List.init 20_000 (Printf.sprintf "word%d")) in
  let r =
    Testing.call
      (serve "/" (fun () ->
           Braid_tyxml.page
             Tyxml.Html.(
               html (head (title (txt "long")) []) (body [ p [ txt text ] ]))))
      "/"
  in
  Alcotest.(check bool)
    "the paragraph is intact" true
    (contains ~sub:("<p>" ^ text ^ "</p>") r.body);
  Alcotest.(check int)
    "one line break, after the doctype" 1 (count ~sub:"\n" r.body)

let test_invalid_status_refused () =
  match Braid_tyxml.fragment ~status:1000 Tyxml.Html.(p [ txt "x" ]) with
  | _ -> Alcotest.fail "status 1000 accepted"
  | exception Invalid_argument _ -> ()

let () =
  Alcotest.run "braid_tyxml"
    [
      ( "page",
        [
          Alcotest.test_case "hostile text is escaped on the wire" `Quick
            test_page_escapes_on_the_wire;
          Alcotest.test_case "status and fields" `Quick test_status_and_fields;
          Alcotest.test_case "long text unchanged" `Quick
            test_long_text_unchanged;
        ] );
      ( "fragment",
        [
          Alcotest.test_case "an element alone" `Quick test_fragment;
          Alcotest.test_case "an attribute cannot be left" `Quick
            test_attribute_cannot_be_left;
          Alcotest.test_case "invalid status" `Quick test_invalid_status_refused;
        ] );
    ]
