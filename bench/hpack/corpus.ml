(* Chromium 156's fields on Linux; the values vary as on a real connection:
   paths, referers, the priority by destination, the date every few
   responses, sizes and validators by file. *)

let authority = "shop.example.com"

let user_agent =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
   Chrome/156.0.0.0 Safari/537.36"

let cookie = "session=Qm9sdC1zZXNzaW9uLWlkLTAxMjM0NTY3ODlhYmNkZWY; theme=dark"

type destination = Document | Script | Style | Image | Font

let subresource i =
  match i mod 5 with
  | 0 -> (Script, Printf.sprintf "/static/js/chunk-%04x.js" (i * 7919))
  | 1 -> (Style, Printf.sprintf "/static/css/app-%d.css" i)
  | 2 | 3 ->
      (Image, Printf.sprintf "/images/product/%d/thumb-%d.webp" (i * 31) i)
  | _ -> (Font, Printf.sprintf "/static/fonts/inter-%d.woff2" (i mod 3))

let pages = 4
let subresources = 30

let loads =
  List.concat
    (List.init pages (fun page ->
         let path = Printf.sprintf "/catalogue/%d?sort=price" (page + 1) in
         (Document, path, None)
         :: List.init subresources (fun i ->
                let dest, p = subresource ((page * subresources) + i) in
                (dest, p, Some path))))

let request (dest, path, referer) =
  let common =
    [
      (":method", "GET");
      (":authority", authority);
      (":scheme", "https");
      (":path", path);
      ("sec-ch-ua", "\"Chromium\";v=\"156\", \"Not;A=Brand\";v=\"24\"");
      ("sec-ch-ua-mobile", "?0");
      ("sec-ch-ua-platform", "\"Linux\"");
    ]
  in
  let by_destination =
    match dest with
    | Document ->
        [
          ("upgrade-insecure-requests", "1");
          ("user-agent", user_agent);
          ( "accept",
            "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8"
          );
          ("sec-fetch-site", "same-origin");
          ("sec-fetch-mode", "navigate");
          ("sec-fetch-user", "?1");
          ("sec-fetch-dest", "document");
        ]
    | Script | Style | Image | Font ->
        let accept, mode, name =
          match dest with
          | Script -> ("*/*", "no-cors", "script")
          | Style -> ("text/css,*/*;q=0.1", "no-cors", "style")
          | Image ->
              ( "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
                "no-cors",
                "image" )
          | Font | Document -> ("*/*", "cors", "font")
        in
        [
          ("user-agent", user_agent);
          ("accept", accept);
          ("sec-fetch-site", "same-origin");
          ("sec-fetch-mode", mode);
          ("sec-fetch-dest", name);
        ]
  in
  let referer =
    match referer with
    | Some r -> [ ("referer", "https://" ^ authority ^ r) ]
    | None -> []
  in
  let priority =
    match dest with
    | Document -> "u=0, i"
    | Style | Font -> "u=0"
    | Script -> "u=1"
    | Image -> "u=2, i"
  in
  common @ by_destination @ referer
  @ [
      ("accept-encoding", "gzip, deflate, br, zstd");
      ("accept-language", "en-GB,en;q=0.9");
      ("cookie", cookie);
      ("priority", priority);
    ]

let response n (dest, path, _) =
  let content_type =
    match dest with
    | Document -> "text/html; charset=utf-8"
    | Script -> "text/javascript"
    | Style -> "text/css"
    | Image -> "image/webp"
    | Font -> "font/woff2"
  in
  let size = 512 + (String.length path * 397 mod 65536) in
  [
    (":status", "200");
    ("server", "braid");
    ( "date",
      Printf.sprintf "Sat, 28 Nov 2026 10:%02d:%02d GMT" (n / 600)
        (n / 10 mod 60) );
    ("content-type", content_type);
    ("content-length", string_of_int size);
    ("last-modified", "Fri, 27 Nov 2026 18:04:11 GMT");
    ("etag", Printf.sprintf "\"%x-%x\"" size (Hashtbl.hash path));
    ( "cache-control",
      if dest = Document then "no-cache"
      else "public, max-age=31536000, immutable" );
    ("accept-ranges", "bytes");
    ("vary", "accept-encoding");
  ]

let requests = List.map request loads
let responses = List.mapi response loads
