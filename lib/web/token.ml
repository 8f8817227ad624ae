external getrandom : int -> string = "braid_web_getrandom"

let random_bytes n =
  if n < 0 then invalid_arg "Token.random_bytes: negative length";
  getrandom n

let generate ?(bytes = 32) () =
  if bytes < 16 then
    invalid_arg "Token.generate: fewer than 16 bytes can be guessed";
  Base64.encode_string ~pad:false ~alphabet:Base64.uri_safe_alphabet
    (random_bytes bytes)

(* Every byte is looked at whatever the differences: OR of XORs, one
   comparison at the end. [String.unsafe_get] keeps bounds checks (branches)
   out of the loop; the indices are below both lengths. *)
let equal a b =
  let n = String.length a in
  if n <> String.length b then false
  else
    let acc = ref 0 in
    for i = 0 to n - 1 do
      acc :=
        !acc
        lor (Char.code (String.unsafe_get a i)
            lxor Char.code (String.unsafe_get b i))
    done;
    !acc = 0
