(* Field values hold no CR, LF or other control: [String.trim] removes
   exactly the optional whitespace around members and parameters. *)

(* qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ) (§12.4.2):
   only whether it is above zero matters here. [None] if malformed. *)
let positive_weight q =
  let n = String.length q in
  let digits_from i =
    let rec go k = k = n || (q.[k] >= '0' && q.[k] <= '9' && go (k + 1)) in
    n - i <= 3 && go i
  in
  if n = 0 then None
  else if q.[0] = '1' then
    if n = 1 || (q.[1] = '.' && digits_from 2) then Some true else None
  else if q.[0] = '0' then
    if n = 1 then Some false
    else if q.[1] = '.' && digits_from 2 then
      Some (String.exists (fun c -> c >= '1' && c <= '9') q)
    else None
  else None

(* A member: the coding, lower-cased, and whether its weight is above 0. *)
let member m =
  match String.split_on_char ';' m with
  | [] -> None
  | coding :: params -> (
      let coding = String.lowercase_ascii (String.trim coding) in
      if coding = "" then None
      else
        let weight =
          List.fold_left
            (fun acc p ->
              let p = String.trim p in
              if String.length p >= 2 && (p.[0] = 'q' || p.[0] = 'Q') then
                let rest = String.trim (String.sub p 1 (String.length p - 1)) in
                if String.length rest >= 1 && rest.[0] = '=' then
                  positive_weight
                    (String.trim (String.sub rest 1 (String.length rest - 1)))
                else acc
              else acc)
            (Some true) params
        in
        match weight with Some w -> Some (coding, w) | None -> None)

let accepted lines coding =
  let coding = String.lowercase_ascii coding in
  let members =
    List.concat_map
      (fun line -> List.filter_map member (String.split_on_char ',' line))
      lines
  in
  match List.assoc_opt coding members with
  | Some weight -> weight
  | None -> (
      match List.assoc_opt "*" members with Some w -> w | None -> false)
