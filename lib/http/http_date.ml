let day_names = [| "Thu"; "Fri"; "Sat"; "Sun"; "Mon"; "Tue"; "Wed" |]

let month_names =
  [|
    "Jan"; "Feb"; "Mar"; "Apr"; "May"; "Jun";
    "Jul"; "Aug"; "Sep"; "Oct"; "Nov"; "Dec";
  |]
[@@ocamlformat "disable"]

(* Days since 1970-01-01 of a proleptic Gregorian date, and back (Howard
   Hinnant's algorithms): no [Unix.gmtime] call, no time-zone state. *)
let days_of_civil ~year ~month ~day =
  let y = if month <= 2 then year - 1 else year in
  let era = (if y >= 0 then y else y - 399) / 400 in
  let yoe = y - (era * 400) in
  let mp = (month + 9) mod 12 in
  let doy = (((153 * mp) + 2) / 5) + day - 1 in
  let doe = (yoe * 365) + (yoe / 4) - (yoe / 100) + doy in
  (era * 146097) + doe - 719468

let civil_of_days days =
  let z = days + 719468 in
  let era = (if z >= 0 then z else z - 146096) / 146097 in
  let doe = z - (era * 146097) in
  let yoe = (doe - (doe / 1460) + (doe / 36524) - (doe / 146096)) / 365 in
  let doy = doe - ((365 * yoe) + (yoe / 4) - (yoe / 100)) in
  let mp = ((5 * doy) + 2) / 153 in
  let day = doy - (((153 * mp) + 2) / 5) + 1 in
  let month = if mp < 10 then mp + 3 else mp - 9 in
  let year = yoe + (era * 400) + if month <= 2 then 1 else 0 in
  (year, month, day)

let format t =
  let secs = if Float.is_nan t || t < 0. then 0 else int_of_float t in
  let days = secs / 86400 and in_day = secs mod 86400 in
  let year, month, day = civil_of_days days in
  let b = Bytes.of_string "Xxx, 00 Xxx 0000 00:00:00 GMT" in
  let two off n =
    Bytes.set b off (Char.chr (48 + (n / 10)));
    Bytes.set b (off + 1) (Char.chr (48 + (n mod 10)))
  in
  Bytes.blit_string day_names.(days mod 7) 0 b 0 3;
  two 5 day;
  Bytes.blit_string month_names.(month - 1) 0 b 8 3;
  two 12 (year / 100 mod 100);
  two 14 (year mod 100);
  two 17 (in_day / 3600);
  two 20 (in_day / 60 mod 60);
  two 23 (in_day mod 60);
  Bytes.unsafe_to_string b

(* {1 Parsing} *)

exception Bad

let long_day_names =
  [ "Monday"; "Tuesday"; "Wednesday"; "Thursday"; "Friday"; "Saturday";
    "Sunday" ]
[@@ocamlformat "disable"]

let month_of s =
  let rec find i =
    if i = 12 then raise Bad
    else if String.equal month_names.(i) s then i + 1
    else find (i + 1)
  in
  find 0

let digits s off len =
  if off < 0 || off + len > String.length s then raise Bad;
  let n = ref 0 in
  for i = off to off + len - 1 do
    match s.[i] with
    | '0' .. '9' as c -> n := (!n * 10) + Char.code c - 48
    | _ -> raise Bad
  done;
  !n

let expect s off c = if off >= String.length s || s.[off] <> c then raise Bad

let days_in_month ~year month =
  match month with
  | 2 ->
      if (year mod 4 = 0 && year mod 100 <> 0) || year mod 400 = 0 then 29
      else 28
  | 4 | 6 | 9 | 11 -> 30
  | _ -> 31

(* "HH:MM:SS" at [off]. *)
let time_of_day s off =
  let h = digits s off 2 and m = digits s (off + 3) 2 in
  expect s (off + 2) ':';
  expect s (off + 5) ':';
  let sec = digits s (off + 6) 2 in
  if h > 23 || m > 59 || sec > 60 then raise Bad;
  (h * 3600) + (m * 60) + sec

let make ~year ~month ~day ~seconds =
  if day < 1 || day > days_in_month ~year month then raise Bad;
  float_of_int ((days_of_civil ~year ~month ~day * 86400) + seconds)

(* "Sun, 06 Nov 1994 08:49:37 GMT" *)
let imf_fixdate s =
  if String.length s <> 29 then raise Bad;
  if not (Array.mem (String.sub s 0 3) day_names) then raise Bad;
  expect s 3 ',';
  expect s 4 ' ';
  expect s 7 ' ';
  expect s 11 ' ';
  expect s 16 ' ';
  expect s 25 ' ';
  if String.sub s 26 3 <> "GMT" then raise Bad;
  let day = digits s 5 2 and month = month_of (String.sub s 8 3) in
  make ~year:(digits s 12 4) ~month ~day ~seconds:(time_of_day s 17)

let fifty_years = 50. *. 365.2425 *. 86400.

(* "Sunday, 06-Nov-94 08:49:37 GMT" *)
let rfc850 ?now s =
  let comma = try String.index s ',' with Not_found -> raise Bad in
  if not (List.mem (String.sub s 0 comma) long_day_names) then raise Bad;
  let o = comma + 1 in
  if String.length s <> o + 23 then raise Bad;
  expect s o ' ';
  expect s (o + 3) '-';
  expect s (o + 7) '-';
  expect s (o + 10) ' ';
  expect s (o + 19) ' ';
  if String.sub s (o + 20) 3 <> "GMT" then raise Bad;
  let day = digits s (o + 1) 2 and month = month_of (String.sub s (o + 4) 3) in
  let yy = digits s (o + 8) 2 and seconds = time_of_day s (o + 11) in
  match now with
  | None ->
      let year = if yy < 70 then 2000 + yy else 1900 + yy in
      make ~year ~month ~day ~seconds
  | Some now ->
      (* The first year ending in [yy] from [now]'s on, or the one a
         century before if that is more than 50 years ahead of [now] (RFC
         9110 §5.6.7). *)
      let now_year, _, _ =
        civil_of_days (int_of_float (Float.max now 0. /. 86400.))
      in
      let year = (now_year / 100 * 100) + yy in
      let year = if year < now_year then year + 100 else year in
      let t = make ~year ~month ~day ~seconds in
      if t > now +. fifty_years then
        make ~year:(year - 100) ~month ~day ~seconds
      else t

(* "Sun Nov  6 08:49:37 1994" *)
let asctime s =
  if String.length s <> 24 then raise Bad;
  if not (Array.mem (String.sub s 0 3) day_names) then raise Bad;
  expect s 3 ' ';
  expect s 7 ' ';
  expect s 10 ' ';
  expect s 19 ' ';
  let month = month_of (String.sub s 4 3) in
  let day = if s.[8] = ' ' then digits s 9 1 else digits s 8 2 in
  make ~year:(digits s 20 4) ~month ~day ~seconds:(time_of_day s 11)

let parse ?now s =
  let s = String.trim s in
  let attempt f = match f s with t -> Some t | exception Bad -> None in
  match attempt imf_fixdate with
  | Some _ as t -> t
  | None -> (
      match attempt (rfc850 ?now) with
      | Some _ as t -> t
      | None -> attempt asctime)
