(* Requests as browsers send them over HTTP/1.1 (captured shapes, made-up
   values): navigations, sub-resources, fetches, conditional GETs, form and
   JSON posts, and one chunked upload to exercise that path. *)

let chrome_navigation =
  "GET /docs/getting-started?lang=en HTTP/1.1\r\n\
   Host: www.example.org\r\n\
   Connection: keep-alive\r\n\
   sec-ch-ua: \"Chromium\";v=\"124\", \"Google Chrome\";v=\"124\", \
   \"Not-A.Brand\";v=\"99\"\r\n\
   sec-ch-ua-mobile: ?0\r\n\
   sec-ch-ua-platform: \"Linux\"\r\n\
   Upgrade-Insecure-Requests: 1\r\n\
   User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like \
   Gecko) Chrome/124.0.0.0 Safari/537.36\r\n\
   Accept: \
   text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7\r\n\
   Sec-Fetch-Site: same-origin\r\n\
   Sec-Fetch-Mode: navigate\r\n\
   Sec-Fetch-User: ?1\r\n\
   Sec-Fetch-Dest: document\r\n\
   Referer: https://www.example.org/\r\n\
   Accept-Encoding: gzip, deflate, br, zstd\r\n\
   Accept-Language: en-GB,en-US;q=0.9,en;q=0.8\r\n\
   Cookie: _ga=GA1.1.1912344321.1714000000; session=9f8e7d6c5b4a39281706; \
   theme=dark; _ga_X1Y2Z3=GS1.1.1714000000.3.1.1714000123.0.0.0\r\n\
   \r\n"

let chrome_stylesheet =
  "GET /assets/css/main.3f2a1b.css HTTP/1.1\r\n\
   Host: www.example.org\r\n\
   Connection: keep-alive\r\n\
   sec-ch-ua: \"Chromium\";v=\"124\", \"Google Chrome\";v=\"124\", \
   \"Not-A.Brand\";v=\"99\"\r\n\
   sec-ch-ua-mobile: ?0\r\n\
   User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like \
   Gecko) Chrome/124.0.0.0 Safari/537.36\r\n\
   sec-ch-ua-platform: \"Linux\"\r\n\
   Accept: text/css,*/*;q=0.1\r\n\
   Sec-Fetch-Site: same-origin\r\n\
   Sec-Fetch-Mode: no-cors\r\n\
   Sec-Fetch-Dest: style\r\n\
   Referer: https://www.example.org/docs/getting-started?lang=en\r\n\
   Accept-Encoding: gzip, deflate, br, zstd\r\n\
   Accept-Language: en-GB,en-US;q=0.9,en;q=0.8\r\n\
   Cookie: _ga=GA1.1.1912344321.1714000000; session=9f8e7d6c5b4a39281706; \
   theme=dark\r\n\
   \r\n"

let chrome_image =
  "GET /images/hero-1280.webp HTTP/1.1\r\n\
   Host: static.example.org\r\n\
   Connection: keep-alive\r\n\
   sec-ch-ua: \"Chromium\";v=\"124\", \"Google Chrome\";v=\"124\", \
   \"Not-A.Brand\";v=\"99\"\r\n\
   sec-ch-ua-mobile: ?0\r\n\
   User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like \
   Gecko) Chrome/124.0.0.0 Safari/537.36\r\n\
   sec-ch-ua-platform: \"Linux\"\r\n\
   Accept: image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8\r\n\
   Sec-Fetch-Site: same-site\r\n\
   Sec-Fetch-Mode: no-cors\r\n\
   Sec-Fetch-Dest: image\r\n\
   Referer: https://www.example.org/\r\n\
   Accept-Encoding: gzip, deflate, br, zstd\r\n\
   Accept-Language: en-GB,en-US;q=0.9,en;q=0.8\r\n\
   \r\n"

let chrome_fetch_json =
  "GET /api/v2/notifications?since=1714000000&limit=20 HTTP/1.1\r\n\
   Host: www.example.org\r\n\
   Connection: keep-alive\r\n\
   sec-ch-ua: \"Chromium\";v=\"124\", \"Google Chrome\";v=\"124\", \
   \"Not-A.Brand\";v=\"99\"\r\n\
   Accept: application/json\r\n\
   sec-ch-ua-mobile: ?0\r\n\
   User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like \
   Gecko) Chrome/124.0.0.0 Safari/537.36\r\n\
   X-Requested-With: XMLHttpRequest\r\n\
   sec-ch-ua-platform: \"Linux\"\r\n\
   Sec-Fetch-Site: same-origin\r\n\
   Sec-Fetch-Mode: cors\r\n\
   Sec-Fetch-Dest: empty\r\n\
   Referer: https://www.example.org/dashboard\r\n\
   Accept-Encoding: gzip, deflate, br, zstd\r\n\
   Accept-Language: en-GB,en-US;q=0.9,en;q=0.8\r\n\
   Cookie: session=9f8e7d6c5b4a39281706; theme=dark\r\n\
   \r\n"

let firefox_navigation =
  "GET /blog/2024/05/effects-in-practice.html HTTP/1.1\r\n\
   Host: www.example.org\r\n\
   User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 \
   Firefox/125.0\r\n\
   Accept: \
   text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8\r\n\
   Accept-Language: en-GB,en;q=0.5\r\n\
   Accept-Encoding: gzip, deflate, br\r\n\
   Referer: https://www.example.org/blog/\r\n\
   Connection: keep-alive\r\n\
   Cookie: session=0a1b2c3d4e5f60718293; consent=yes\r\n\
   Upgrade-Insecure-Requests: 1\r\n\
   Sec-Fetch-Dest: document\r\n\
   Sec-Fetch-Mode: navigate\r\n\
   Sec-Fetch-Site: same-origin\r\n\
   Sec-Fetch-User: ?1\r\n\
   Priority: u=0, i\r\n\
   \r\n"

let firefox_conditional_script =
  "GET /assets/js/app.91c4d2.js HTTP/1.1\r\n\
   Host: www.example.org\r\n\
   User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 \
   Firefox/125.0\r\n\
   Accept: */*\r\n\
   Accept-Language: en-GB,en;q=0.5\r\n\
   Accept-Encoding: gzip, deflate, br\r\n\
   Referer: https://www.example.org/blog/2024/05/effects-in-practice.html\r\n\
   Connection: keep-alive\r\n\
   Cookie: session=0a1b2c3d4e5f60718293; consent=yes\r\n\
   Sec-Fetch-Dest: script\r\n\
   Sec-Fetch-Mode: no-cors\r\n\
   Sec-Fetch-Site: same-origin\r\n\
   If-Modified-Since: Tue, 30 Apr 2024 10:15:00 GMT\r\n\
   If-None-Match: \"5e1f-61742b3a8c0c0\"\r\n\
   Priority: u=2\r\n\
   \r\n"

let safari_navigation =
  "GET /pricing HTTP/1.1\r\n\
   Host: www.example.org\r\n\
   Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n\
   Sec-Fetch-Site: none\r\n\
   Cookie: session=77aa88bb99cc00dd11ee\r\n\
   Sec-Fetch-Dest: document\r\n\
   Accept-Language: en-GB,en;q=0.9\r\n\
   Sec-Fetch-Mode: navigate\r\n\
   User-Agent: Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) \
   AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4.1 Safari/605.1.15\r\n\
   Accept-Encoding: gzip, deflate, br\r\n\
   Connection: keep-alive\r\n\
   \r\n"

let chrome_favicon =
  "GET /favicon.ico HTTP/1.1\r\n\
   Host: www.example.org\r\n\
   Connection: keep-alive\r\n\
   User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like \
   Gecko) Chrome/124.0.0.0 Safari/537.36\r\n\
   Accept: image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8\r\n\
   Sec-Fetch-Site: same-origin\r\n\
   Sec-Fetch-Mode: no-cors\r\n\
   Sec-Fetch-Dest: image\r\n\
   Referer: https://www.example.org/pricing\r\n\
   Accept-Encoding: gzip, deflate, br, zstd\r\n\
   Accept-Language: en-GB,en-US;q=0.9,en;q=0.8\r\n\
   Cookie: session=9f8e7d6c5b4a39281706; theme=dark\r\n\
   \r\n"

let form_body =
  "email=ada%40example.org&password=correct+horse+battery&remember=on"

let chrome_form_post =
  "POST /login HTTP/1.1\r\n\
   Host: www.example.org\r\n\
   Connection: keep-alive\r\n\
   Content-Length: "
  ^ string_of_int (String.length form_body)
  ^ "\r\n\
     Cache-Control: max-age=0\r\n\
     sec-ch-ua: \"Chromium\";v=\"124\", \"Google Chrome\";v=\"124\", \
     \"Not-A.Brand\";v=\"99\"\r\n\
     sec-ch-ua-mobile: ?0\r\n\
     sec-ch-ua-platform: \"Linux\"\r\n\
     Upgrade-Insecure-Requests: 1\r\n\
     Origin: https://www.example.org\r\n\
     Content-Type: application/x-www-form-urlencoded\r\n\
     User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, \
     like Gecko) Chrome/124.0.0.0 Safari/537.36\r\n\
     Accept: \
     text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8\r\n\
     Sec-Fetch-Site: same-origin\r\n\
     Sec-Fetch-Mode: navigate\r\n\
     Sec-Fetch-User: ?1\r\n\
     Sec-Fetch-Dest: document\r\n\
     Referer: https://www.example.org/login\r\n\
     Accept-Encoding: gzip, deflate, br, zstd\r\n\
     Accept-Language: en-GB,en-US;q=0.9,en;q=0.8\r\n\
     \r\n" ^ form_body

let json_body =
  "{\"title\":\"Effects in \
   practice\",\"tags\":[\"ocaml\",\"effects\",\"parsing\"],\"draft\":true,\"body\":\"Direct-style \
   parsers read like the grammar and ask for input only when they run out of \
   it.\"}"

let firefox_json_post =
  "POST /api/v2/posts HTTP/1.1\r\n\
   Host: www.example.org\r\n\
   User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 \
   Firefox/125.0\r\n\
   Accept: application/json\r\n\
   Accept-Language: en-GB,en;q=0.5\r\n\
   Accept-Encoding: gzip, deflate, br\r\n\
   Referer: https://www.example.org/editor\r\n\
   Content-Type: application/json\r\n\
   X-CSRF-Token: 3q2+7wAAAABkZWFkYmVlZg==\r\n\
   Content-Length: "
  ^ string_of_int (String.length json_body)
  ^ "\r\n\
     Origin: https://www.example.org\r\n\
     Connection: keep-alive\r\n\
     Cookie: session=0a1b2c3d4e5f60718293; consent=yes\r\n\
     Sec-Fetch-Dest: empty\r\n\
     Sec-Fetch-Mode: cors\r\n\
     Sec-Fetch-Site: same-origin\r\n\
     \r\n" ^ json_body

let chunked_upload =
  "PUT /api/v2/uploads/42 HTTP/1.1\r\n\
   Host: www.example.org\r\n\
   User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like \
   Gecko) Chrome/124.0.0.0 Safari/537.36\r\n\
   Content-Type: application/octet-stream\r\n\
   Transfer-Encoding: chunked\r\n\
   Origin: https://www.example.org\r\n\
   Cookie: session=9f8e7d6c5b4a39281706; theme=dark\r\n\
   \r\n\
   40\r\n\
   0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\r\n\
   20;part=2\r\n\
   0123456789abcdef0123456789abcdef\r\n\
   0\r\n\
   Digest: sha-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=\r\n\
   \r\n"

let requests =
  [
    chrome_navigation;
    chrome_stylesheet;
    chrome_image;
    chrome_fetch_json;
    firefox_navigation;
    firefox_conditional_script;
    safari_navigation;
    chrome_favicon;
    chrome_form_post;
    firefox_json_post;
    chunked_upload;
  ]
