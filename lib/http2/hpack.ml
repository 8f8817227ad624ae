type field = { name : string; value : string; never_indexed : bool }
type header_list = { pseudo : field list; regular : field list }

(* {1 The static table (RFC 7541 Appendix A)} *)

let static_table =
  [|
    ("", "") (* index 0 is not an entry: indices start at 1 *);
    (":authority", "");
    (":method", "GET");
    (":method", "POST");
    (":path", "/");
    (":path", "/index.html");
    (":scheme", "http");
    (":scheme", "https");
    (":status", "200");
    (":status", "204");
    (":status", "206");
    (":status", "304");
    (":status", "400");
    (":status", "404");
    (":status", "500");
    ("accept-charset", "");
    ("accept-encoding", "gzip, deflate");
    ("accept-language", "");
    ("accept-ranges", "");
    ("accept", "");
    ("access-control-allow-origin", "");
    ("age", "");
    ("allow", "");
    ("authorization", "");
    ("cache-control", "");
    ("content-disposition", "");
    ("content-encoding", "");
    ("content-language", "");
    ("content-length", "");
    ("content-location", "");
    ("content-range", "");
    ("content-type", "");
    ("cookie", "");
    ("date", "");
    ("etag", "");
    ("expect", "");
    ("expires", "");
    ("from", "");
    ("host", "");
    ("if-match", "");
    ("if-modified-since", "");
    ("if-none-match", "");
    ("if-range", "");
    ("if-unmodified-since", "");
    ("last-modified", "");
    ("link", "");
    ("location", "");
    ("max-forwards", "");
    ("proxy-authenticate", "");
    ("proxy-authorization", "");
    ("range", "");
    ("referer", "");
    ("refresh", "");
    ("retry-after", "");
    ("server", "");
    ("set-cookie", "");
    ("strict-transport-security", "");
    ("transfer-encoding", "");
    ("user-agent", "");
    ("vary", "");
    ("via", "");
    ("www-authenticate", "");
  |]

let static_table_length = Array.length static_table - 1

(* The encoder's look-ups, as matches the compiler turns into comparisons
   rather than a hash table built at start-up. [static_name_index name] is
   the first index with that name, 0 if none; [static_field_index] the index
   of the whole field, 0 if none. *)
let static_name_index = function
  | ":authority" -> 1
  | ":method" -> 2
  | ":path" -> 4
  | ":scheme" -> 6
  | ":status" -> 8
  | "accept-charset" -> 15
  | "accept-encoding" -> 16
  | "accept-language" -> 17
  | "accept-ranges" -> 18
  | "accept" -> 19
  | "access-control-allow-origin" -> 20
  | "age" -> 21
  | "allow" -> 22
  | "authorization" -> 23
  | "cache-control" -> 24
  | "content-disposition" -> 25
  | "content-encoding" -> 26
  | "content-language" -> 27
  | "content-length" -> 28
  | "content-location" -> 29
  | "content-range" -> 30
  | "content-type" -> 31
  | "cookie" -> 32
  | "date" -> 33
  | "etag" -> 34
  | "expect" -> 35
  | "expires" -> 36
  | "from" -> 37
  | "host" -> 38
  | "if-match" -> 39
  | "if-modified-since" -> 40
  | "if-none-match" -> 41
  | "if-range" -> 42
  | "if-unmodified-since" -> 43
  | "last-modified" -> 44
  | "link" -> 45
  | "location" -> 46
  | "max-forwards" -> 47
  | "proxy-authenticate" -> 48
  | "proxy-authorization" -> 49
  | "range" -> 50
  | "referer" -> 51
  | "refresh" -> 52
  | "retry-after" -> 53
  | "server" -> 54
  | "set-cookie" -> 55
  | "strict-transport-security" -> 56
  | "transfer-encoding" -> 57
  | "user-agent" -> 58
  | "vary" -> 59
  | "via" -> 60
  | "www-authenticate" -> 61
  | _ -> 0

let static_field_index name value =
  match (name, value) with
  | ":method", "GET" -> 2
  | ":method", "POST" -> 3
  | ":path", "/" -> 4
  | ":path", "/index.html" -> 5
  | ":scheme", "http" -> 6
  | ":scheme", "https" -> 7
  | ":status", "200" -> 8
  | ":status", "204" -> 9
  | ":status", "206" -> 10
  | ":status", "304" -> 11
  | ":status", "400" -> 12
  | ":status", "404" -> 13
  | ":status", "500" -> 14
  | "accept-encoding", "gzip, deflate" -> 16
  | _, "" ->
      (* Entries without a value match a field with an empty one, but for
         names that also have entries with values ([:path] "" is not
         [:path] "/"). *)
      let i = static_name_index name in
      if i > 0 && snd static_table.(i) = "" then i else 0
  | _ -> 0

let table_entries table =
  List.init (Dynamic_table.length table) (fun i ->
      (Dynamic_table.name table (i + 1), Dynamic_table.value table (i + 1)))

type indexing = Incremental | Without_indexing | Never_indexed

(* {1 Decoding} *)

module Decoder = struct
  type t = {
    table : Dynamic_table.t;
    mutable table_size_limit : int;
        (* The SETTINGS_HEADER_TABLE_SIZE in force: the largest update the
           peer may send. *)
    mutable update_required : bool;
        (* The limit went below the table's size: the next block must begin
           with an update (§4.2). *)
    max_header_list_size : int;
    mutable failed : bool;
        (* A compression error happened: the tables are out of step. *)
  }

  type error =
    | Compression_error of string
    | Header_list_too_large of { limit : int }
    | Malformed of string

  let create ?(max_table_size = 4096) ?(max_header_list_size = 65536) () =
    if max_table_size < 0 || max_header_list_size < 0 then
      invalid_arg "Hpack.Decoder.create";
    {
      table = Dynamic_table.create ~max_size:max_table_size;
      table_size_limit = max_table_size;
      update_required = false;
      max_header_list_size;
      failed = false;
    }

  let set_max_table_size t n =
    if n < 0 then invalid_arg "Hpack.Decoder.set_max_table_size";
    t.table_size_limit <- n;
    if n < Dynamic_table.max_size t.table then t.update_required <- true

  let pp_error ppf = function
    | Compression_error reason ->
        Format.fprintf ppf "compression error: %s" reason
    | Header_list_too_large { limit } ->
        Format.fprintf ppf "header list larger than %d bytes" limit
    | Malformed reason -> Format.fprintf ppf "malformed field block: %s" reason

  let to_violation ~stream = function
    | Compression_error reason ->
        Violation.Connection_error { code = Compression_error; reason }
    | Header_list_too_large _ ->
        Violation.Stream_error
          { stream; code = Protocol_error; reason = "header list too large" }
    | Malformed reason ->
        Violation.Stream_error { stream; code = Protocol_error; reason }

  let table_size t = Dynamic_table.size t.table
  let table_entries t = table_entries t.table

  exception Invalid of string

  let invalid reason = raise_notrace (Invalid reason)

  (* {2 Field validity (RFC 9113 §8.2.1)} *)

  (* A name byte must be visible ASCII other than an uppercase letter. *)
  let valid_name_byte c = c > ' ' && c < '\x7f' && not (c >= 'A' && c <= 'Z')

  let check_name name ~from =
    for i = from to String.length name - 1 do
      let c = String.unsafe_get name i in
      if not (valid_name_byte c) then
        invalid
          (if c >= 'A' && c <= 'Z' then "uppercase field name"
           else "invalid character in field name");
      if c = ':' then invalid "colon inside a field name"
    done

  let check_value value =
    let n = String.length value in
    if n > 0 then (
      let first = String.unsafe_get value 0
      and last = String.unsafe_get value (n - 1) in
      if first = ' ' || first = '\t' || last = ' ' || last = '\t' then
        invalid "field value with surrounding whitespace";
      if String.exists (fun c -> c = '\000' || c = '\r' || c = '\n') value then
        invalid "NUL, CR or LF in a field value")

  (* The block being decoded. The fields are kept (newest first) until the
     list grows too large or turns out malformed; after that they are only
     counted, but the block is still read to its end for the table's sake. *)
  type block = {
    mutable pseudo : field list;
    mutable regular : field list;
    mutable list_size : int;
    mutable malformed : string option;
    mutable too_large : bool;
  }

  let keep t block ~trusted name value never_indexed =
    block.list_size <- block.list_size + Dynamic_table.entry_size name value;
    if block.list_size > t.max_header_list_size then (
      block.too_large <- true;
      block.pseudo <- [];
      block.regular <- [])
    else if block.malformed = None && not block.too_large then
      match
        let is_pseudo = String.length name > 0 && name.[0] = ':' in
        (* Static entries are valid fields; only names are checked for
           them, since a pseudo-header may still be out of place. *)
        if not trusted then (
          if name = "" then invalid "empty field name";
          check_name name ~from:(if is_pseudo then 1 else 0);
          check_value value);
        if is_pseudo && block.regular <> [] then
          invalid "pseudo-header field after a regular field";
        is_pseudo
      with
      | is_pseudo ->
          let field = { name; value; never_indexed } in
          if is_pseudo then block.pseudo <- field :: block.pseudo
          else block.regular <- field :: block.regular
      | exception Invalid reason ->
          block.malformed <- Some reason;
          block.pseudo <- [];
          block.regular <- []

  (* {2 Primitives (§5)}

     Each reads at [pos] within the block, which ends at [stop], and
     returns the value and the position after it. *)

  (* Integers with an N-bit prefix (§5.1). Nothing in a block needs more
     than 2^28 (a length, an index or a table size), so more than four
     continuation bytes is an error rather than a silent overflow. *)
  let integer b pos stop ~prefix =
    let mask = (1 lsl prefix) - 1 in
    let v = Char.code (Bytes.unsafe_get b pos) land mask in
    if v < mask then (v, pos + 1)
    else
      let rec more v shift pos =
        if pos >= stop then invalid "truncated integer"
        else if shift > 21 then invalid "integer too large"
        else
          let byte = Char.code (Bytes.unsafe_get b pos) in
          let v = v + ((byte land 0x7f) lsl shift) in
          if byte land 0x80 = 0 then (v, pos + 1)
          else more v (shift + 7) (pos + 1)
      in
      more v 0 (pos + 1)

  (* String literals (§5.2). *)
  let string b pos stop =
    if pos >= stop then invalid "truncated string";
    let huffman = Char.code (Bytes.unsafe_get b pos) land 0x80 <> 0 in
    let length, pos = integer b pos stop ~prefix:7 in
    if length > stop - pos then invalid "string longer than the block";
    let s =
      if huffman then
        match Huffman.decode b pos length with
        | Some s -> s
        | None -> invalid "invalid Huffman coding"
      else Bytes.sub_string b pos length
    in
    (s, pos + length)

  (* The field at [index] of either table, and whether it is a static
     entry. *)
  let field_at t index =
    if index = 0 then invalid "index 0"
    else if index <= static_table_length then static_table.(index)
    else
      let i = index - static_table_length in
      if i > Dynamic_table.length t.table then invalid "index out of range"
      else (Dynamic_table.name t.table i, Dynamic_table.value t.table i)

  (* {2 Representations (§6)} *)

  let literal t block b pos stop ~prefix ~indexing =
    let index, pos = integer b pos stop ~prefix in
    let name, pos =
      if index = 0 then string b pos stop else (fst (field_at t index), pos)
    in
    let value, pos = string b pos stop in
    if indexing = Incremental then Dynamic_table.add t.table name value;
    keep t block ~trusted:false name value (indexing = Never_indexed);
    pos

  let block_of t b pos stop block =
    let rec instruction pos ~first =
      if pos < stop then
        let byte = Char.code (Bytes.unsafe_get b pos) in
        if byte land 0xe0 = 0x20 then (
          (* Dynamic table size update (§6.3): only before the first field
             (§4.2), and within the limit the settings give. *)
          if not first then invalid "table size update after a field";
          let size, pos = integer b pos stop ~prefix:5 in
          if size > t.table_size_limit then
            invalid "table size update above the limit";
          Dynamic_table.set_max_size t.table size;
          t.update_required <- false;
          instruction pos ~first:true)
        else (
          if t.update_required then invalid "missing table size update";
          let pos =
            if byte land 0x80 <> 0 then (
              (* Indexed field (§6.1). *)
              let index, pos = integer b pos stop ~prefix:7 in
              let name, value = field_at t index in
              keep t block
                ~trusted:(index <= static_table_length)
                name value false;
              pos)
            else if byte land 0xc0 = 0x40 then
              literal t block b pos stop ~prefix:6 ~indexing:Incremental
            else if byte land 0xf0 = 0x10 then
              literal t block b pos stop ~prefix:4 ~indexing:Never_indexed
            else literal t block b pos stop ~prefix:4 ~indexing:Without_indexing
          in
          instruction pos ~first:false)
    in
    instruction pos ~first:true

  let decode t b off len =
    if off < 0 || len < 0 || off > Bytes.length b - len then
      invalid_arg "Hpack.Decoder.decode";
    if t.failed then Error (Compression_error "an earlier block failed")
    else
      let block =
        {
          pseudo = [];
          regular = [];
          list_size = 0;
          malformed = None;
          too_large = false;
        }
      in
      match block_of t b off (off + len) block with
      | () -> (
          if block.too_large then
            Error (Header_list_too_large { limit = t.max_header_list_size })
          else
            match block.malformed with
            | Some reason -> Error (Malformed reason)
            | None ->
                Ok
                  {
                    pseudo = List.rev block.pseudo;
                    regular = List.rev block.regular;
                  })
      | exception Invalid reason ->
          t.failed <- true;
          Error (Compression_error reason)

  let decode_string t s =
    decode t (Bytes.unsafe_of_string s) 0 (String.length s)
end

(* {1 Encoding} *)

let default_indexing name value =
  match name with
  | "authorization" | "proxy-authorization" | "set-cookie" -> Never_indexed
  | "cookie" when String.length value < 20 -> Never_indexed
  | ":path" | "content-length" | "content-range" | "etag" | "last-modified"
  | "if-modified-since" | "if-none-match" | "location" | "age" ->
      Without_indexing
  | _ -> Incremental

module Encoder = struct
  type t = {
    table : Dynamic_table.t;
    limit : int;
    huffman : bool;
    mutable smallest_pending : int option;
        (* The smallest table size set since the last block, if it changed:
           the next block announces it, then the current size (§4.2). *)
  }

  let create ?(max_table_size = 4096) ?(limit = 4096) ?(huffman = true) () =
    if max_table_size < 0 || limit < 0 then invalid_arg "Hpack.Encoder.create";
    let size = min max_table_size limit in
    {
      table = Dynamic_table.create ~max_size:size;
      limit;
      huffman;
      smallest_pending = (if size < max_table_size then Some size else None);
    }

  let set_max_table_size t n =
    if n < 0 then invalid_arg "Hpack.Encoder.set_max_table_size";
    let size = min n t.limit in
    if size <> Dynamic_table.max_size t.table || t.smallest_pending <> None then (
      Dynamic_table.set_max_size t.table size;
      t.smallest_pending <-
        Some
          (match t.smallest_pending with
          | Some smallest -> min smallest size
          | None -> size))

  let table_size t = Dynamic_table.size t.table
  let table_entries t = table_entries t.table

  (* An integer with an N-bit prefix (§5.1); [flags] fills the bits above
     the prefix in the first byte. *)
  let integer b ~prefix ~flags n =
    let max = (1 lsl prefix) - 1 in
    if n < max then Buffer.add_char b (Char.unsafe_chr (flags lor n))
    else (
      Buffer.add_char b (Char.unsafe_chr (flags lor max));
      let n = ref (n - max) in
      while !n >= 0x80 do
        Buffer.add_char b (Char.unsafe_chr (!n land 0x7f lor 0x80));
        n := !n lsr 7
      done;
      Buffer.add_char b (Char.unsafe_chr !n))

  let string t b s =
    let length = String.length s in
    let coded = if t.huffman then Huffman.encoded_length s else length in
    (* Huffman also when it is no shorter: RFC 7541's examples (C.6.2)
       code a literal of equal length. *)
    if t.huffman && length > 0 && coded <= length then (
      integer b ~prefix:7 ~flags:0x80 coded;
      Huffman.encode b s)
    else (
      integer b ~prefix:7 ~flags:0 length;
      Buffer.add_string b s)

  (* The dynamic table's index (counted from 62) of the whole field, or
     else minus the index of its name, or 0. A table holds at most
     [max_size / 32] entries (128 with the default size), so a scan is
     cheaper than keeping an index in step with evictions. *)
  let dynamic_index t name value =
    let n = Dynamic_table.length t.table in
    let rec scan i name_match =
      if i > n then name_match
      else if String.equal (Dynamic_table.name t.table i) name then
        if String.equal (Dynamic_table.value t.table i) value then
          i + static_table_length
        else
          scan (i + 1)
            (if name_match = 0 then -(i + static_table_length) else name_match)
      else scan (i + 1) name_match
    in
    scan 1 0

  let field t b indexing (name, value) =
    let indexing =
      match indexing name value with
      | Incremental
        when Dynamic_table.entry_size name value
             > Dynamic_table.max_size t.table / 2 ->
          Without_indexing
      | indexing -> indexing
    in
    let whole, name_index =
      match static_field_index name value with
      | 0 -> (
          let dynamic = dynamic_index t name value in
          let static_name = static_name_index name in
          match dynamic with
          | i when i > 0 -> (i, if static_name > 0 then static_name else i)
          | i -> (0, if static_name > 0 then static_name else -i))
      | i -> (i, i)
    in
    if whole > 0 && indexing <> Never_indexed then
      integer b ~prefix:7 ~flags:0x80 whole
    else (
      (match indexing with
      | Incremental -> integer b ~prefix:6 ~flags:0x40 name_index
      | Without_indexing -> integer b ~prefix:4 ~flags:0 name_index
      | Never_indexed -> integer b ~prefix:4 ~flags:0x10 name_index);
      if name_index = 0 then string t b name;
      string t b value;
      if indexing = Incremental then Dynamic_table.add t.table name value)

  let encode ?(indexing = default_indexing) t b fields =
    (match t.smallest_pending with
    | None -> ()
    | Some smallest ->
        let size = Dynamic_table.max_size t.table in
        if smallest < size then integer b ~prefix:5 ~flags:0x20 smallest;
        integer b ~prefix:5 ~flags:0x20 size;
        t.smallest_pending <- None);
    List.iter (field t b indexing) fields
end
