type t = {
  limits : Braid_http.Limits.t;
  root : string option;
  index : string;
  input_buffer : int;
  output_buffer : int;
  linger : float;
}

let default =
  {
    limits = Braid_http.Limits.default;
    root = None;
    index = "index.html";
    input_buffer = 4096;
    output_buffer = 16384;
    linger = 2.;
  }
