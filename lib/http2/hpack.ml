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
    mutable scratch : bytes;
        (* Huffman-coded strings are decoded here, then copied out at their
           length. *)
  }

  type error =
    | Compression_error of string
    | Header_list_too_large of { limit : int }
    | Malformed of string

  let create ?(max_table_size = 4096) ?(max_header_list_size = 65536) () =
    if max_table_size < 0 || max_header_list_size < 0 then
      invalid_arg "Hpack.Decoder.create";
    {
      table = Dynamic_table.create ~max_size:max_table_size ();
      table_size_limit = max_table_size;
      update_required = false;
      max_header_list_size;
      failed = false;
      scratch = Bytes.empty;
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

  (* A name byte must be visible ASCII other than an uppercase letter: '\001'
     for those in this table, looked up once a byte. *)
  let name_bytes =
    String.init 256 (fun i ->
        let c = Char.chr i in
        if c > ' ' && c < '\x7f' && (not (c >= 'A' && c <= 'Z')) && c <> ':'
        then '\001'
        else '\000')

  let name_problem name ~from =
    let rec go i =
      if i = String.length name then None
      else if
        String.unsafe_get name_bytes (Char.code (String.unsafe_get name i))
        = '\001'
      then go (i + 1)
      else
        let c = String.unsafe_get name i in
        Some
          (if c >= 'A' && c <= 'Z' then "uppercase field name"
           else if c = ':' then "colon inside a field name"
           else "invalid character in field name")
    in
    go from

  let value_problem value =
    let n = String.length value in
    if n = 0 then None
    else
      let first = String.unsafe_get value 0
      and last = String.unsafe_get value (n - 1) in
      if first = ' ' || first = '\t' || last = ' ' || last = '\t' then
        Some "field value with surrounding whitespace"
      else
        let rec go i =
          if i = n then None
          else
            match String.unsafe_get value i with
            | '\000' | '\r' | '\n' -> Some "NUL, CR or LF in a field value"
            | _ -> go (i + 1)
        in
        go 0

  (* What makes a field of a literal invalid, if anything. Its result goes
     with the field into the table, so that an index to it needs no new
     check. *)
  let problem name value =
    if name = "" then Some "empty field name"
    else
      match name_problem name ~from:(if name.[0] = ':' then 1 else 0) with
      | None -> value_problem value
      | some -> some

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

  (* [problem]: the field's own, found when it came as a literal; what is
     left is its place in the block. *)
  let keep t block ~problem name value never_indexed =
    block.list_size <- block.list_size + Dynamic_table.entry_size name value;
    if block.list_size > t.max_header_list_size then (
      block.too_large <- true;
      block.pseudo <- [];
      block.regular <- [])
    else if block.malformed = None && not block.too_large then
      let is_pseudo = String.length name > 0 && name.[0] = ':' in
      let problem =
        match problem with
        | None when is_pseudo && block.regular <> [] ->
            Some "pseudo-header field after a regular field"
        | problem -> problem
      in
      match problem with
      | None ->
          let field = { name; value; never_indexed } in
          if is_pseudo then block.pseudo <- field :: block.pseudo
          else block.regular <- field :: block.regular
      | Some _ ->
          block.malformed <- problem;
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
  let string t b pos stop =
    if pos >= stop then invalid "truncated string";
    let huffman = Char.code (Bytes.unsafe_get b pos) land 0x80 <> 0 in
    let length, pos = integer b pos stop ~prefix:7 in
    if length > stop - pos then invalid "string longer than the block";
    let s =
      if huffman then (
        let bound = Huffman.decoded_bound length in
        if Bytes.length t.scratch < bound then
          t.scratch <- Bytes.create (Int.max bound 64);
        match Huffman.decode_into b pos length t.scratch with
        | -1 -> invalid "invalid Huffman coding"
        | n -> Bytes.sub_string t.scratch 0 n)
      else Bytes.sub_string b pos length
    in
    (s, pos + length)

  (* The name of the field at [index] of either table. *)
  let name_at t index =
    if index = 0 then invalid "index 0"
    else if index <= static_table_length then fst static_table.(index)
    else
      let i = index - static_table_length in
      if i > Dynamic_table.length t.table then invalid "index out of range"
      else Dynamic_table.name t.table i

  (* {2 Representations (§6)} *)

  let literal t block b pos stop ~prefix ~indexing =
    let index, pos = integer b pos stop ~prefix in
    let name, pos =
      if index = 0 then string t b pos stop else (name_at t index, pos)
    in
    let value, pos = string t b pos stop in
    let problem = problem name value in
    if indexing = Incremental then
      Dynamic_table.add ~checked:(problem = None) t.table name value;
    keep t block ~problem name value (indexing = Never_indexed);
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
              (if index = 0 then invalid "index 0"
               else if index <= static_table_length then
                 let name, value = static_table.(index) in
                 keep t block ~problem:None name value false
               else
                 let i = index - static_table_length in
                 if i > Dynamic_table.length t.table then
                   invalid "index out of range"
                 else
                   let name = Dynamic_table.name t.table i
                   and value = Dynamic_table.value t.table i in
                   keep t block
                     ~problem:
                       (if Dynamic_table.checked t.table i then None
                        else problem name value)
                     name value false);
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
  | ":path" | "content-length" | "content-range" | "if-modified-since"
  | "if-none-match" | "location" | "age" ->
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
    mutable out : bytes;
        (* The block being encoded, from 0 to [pos]: written in place, each
           field's room made once ([ensure]), then handed out as a slice. *)
    mutable pos : int;
  }

  let create ?(max_table_size = 4096) ?(limit = 4096) ?(huffman = true) () =
    if max_table_size < 0 || limit < 0 then invalid_arg "Hpack.Encoder.create";
    let size = min max_table_size limit in
    {
      table = Dynamic_table.create ~indexed:true ~max_size:size ();
      limit;
      huffman;
      smallest_pending = (if size < max_table_size then Some size else None);
      out = Bytes.empty;
      pos = 0;
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

  let ensure t n =
    if t.pos + n > Bytes.length t.out then (
      let bigger = Bytes.create (Int.max 64 (2 * (t.pos + n))) in
      Bytes.blit t.out 0 bigger 0 t.pos;
      t.out <- bigger)

  (* The room a field takes at most: three integers of at most 5 bytes
     (an index or length below 2^28) and the strings, never longer coded
     than plain. *)
  let room name value = 16 + String.length name + String.length value

  (* An integer with an N-bit prefix (§5.1); [flags] fills the bits above
     the prefix in the first byte. The room is made. *)
  let integer t ~prefix ~flags n =
    let b = t.out in
    let max = (1 lsl prefix) - 1 in
    if n < max then (
      Bytes.unsafe_set b t.pos (Char.unsafe_chr (flags lor n));
      t.pos <- t.pos + 1)
    else (
      Bytes.unsafe_set b t.pos (Char.unsafe_chr (flags lor max));
      let n = ref (n - max) and p = ref (t.pos + 1) in
      while !n >= 0x80 do
        Bytes.unsafe_set b !p (Char.unsafe_chr (!n land 0x7f lor 0x80));
        n := !n lsr 7;
        incr p
      done;
      Bytes.unsafe_set b !p (Char.unsafe_chr !n);
      t.pos <- !p + 1)

  let string t s =
    let length = String.length s in
    let coded =
      if t.huffman && length > 0 then Huffman.encoded_length s else max_int
    in
    (* Huffman also when it is no shorter: RFC 7541's examples (C.6.2)
       code a literal of equal length. *)
    if coded <= length then (
      integer t ~prefix:7 ~flags:0x80 coded;
      t.pos <- Huffman.encode_into ~length:coded s t.out t.pos)
    else (
      integer t ~prefix:7 ~flags:0 length;
      Bytes.blit_string s 0 t.out t.pos length;
      t.pos <- t.pos + length)

  (* The dynamic table's index (counted from 62) of the whole field, or
     else minus the index of its name, or 0. *)
  let dynamic_index t ~by_name name value =
    match Dynamic_table.find ~by_name t.table name value with
    | 0 -> 0
    | i when i > 0 -> i + static_table_length
    | i -> i - static_table_length

  let field t indexing (name, value) =
    ensure t (room name value);
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
          let static_name = static_name_index name in
          let dynamic = dynamic_index t ~by_name:(static_name = 0) name value in
          match dynamic with
          | i when i > 0 -> (i, if static_name > 0 then static_name else i)
          | i -> (0, if static_name > 0 then static_name else -i))
      | i -> (i, i)
    in
    if whole > 0 && indexing <> Never_indexed then
      integer t ~prefix:7 ~flags:0x80 whole
    else (
      (match indexing with
      | Incremental -> integer t ~prefix:6 ~flags:0x40 name_index
      | Without_indexing -> integer t ~prefix:4 ~flags:0 name_index
      | Never_indexed -> integer t ~prefix:4 ~flags:0x10 name_index);
      if name_index = 0 then string t name;
      string t value;
      if indexing = Incremental then Dynamic_table.add t.table name value)

  let encode_with ?(indexing = default_indexing) t fields k =
    t.pos <- 0;
    (match t.smallest_pending with
    | None -> ()
    | Some smallest ->
        ensure t 10;
        let size = Dynamic_table.max_size t.table in
        if smallest < size then integer t ~prefix:5 ~flags:0x20 smallest;
        integer t ~prefix:5 ~flags:0x20 size;
        t.smallest_pending <- None);
    List.iter (field t indexing) fields;
    k t.out 0 t.pos

  let encode ?indexing t b fields =
    encode_with ?indexing t fields (fun bytes off len ->
        Buffer.add_subbytes b bytes off len)
end
