open Bench_harness
open Lwt.Syntax

let threads = 16
let small_size = 4096
let chunk = 256 * 1024
let large_readers = 8

type setup = {
  dir : string;
  small : string array;  (** Paths of the small files. *)
  large : string;
  large_size : int;
}

let write_file path size =
  let oc = open_out_bin path in
  output_string oc (String.init size (fun i -> Char.chr (i land 255)));
  close_out oc

let setup ~quick =
  let dir =
    Filename.concat
      (Filename.get_temp_dir_name ())
      (Printf.sprintf "braid-file-io-%d" (Unix.getpid ()))
  in
  Unix.mkdir dir 0o755;
  let count = if quick then 500 else 2_000 in
  let small =
    Array.init count (fun i ->
        let path = Filename.concat dir (Printf.sprintf "small-%04d" i) in
        write_file path small_size;
        path)
  in
  let large_size = (if quick then 16 else 64) * 1024 * 1024 in
  let large = Filename.concat dir "large" in
  write_file large large_size;
  (* Into the page cache, for both sides alike. *)
  Array.iter
    (fun p -> ignore (In_channel.with_open_bin p In_channel.input_all))
    small;
  ignore (In_channel.with_open_bin large In_channel.input_all);
  { dir; small; large; large_size }

let remove s =
  Array.iter Sys.remove s.small;
  Sys.remove s.large;
  Unix.rmdir s.dir

let cpu_s () =
  let t = Unix.times () in
  t.tms_utime +. t.tms_stime

(* One measurement: wall seconds, CPU seconds, longest ticker gap (ms). *)
type sample = { wall : float; cpu : float; gap_ms : float }

let fibers = 100

(* Work split among [n] workers: worker [w] takes items w, w + n, ... *)
let shares n items w =
  List.filter (fun i -> i mod n = w) (List.init items Fun.id)

(* Braid *)

let braid_measure pool work =
  Braid_io.run @@ fun () ->
  Braid_io.Blocking.with_pool pool @@ fun () ->
  let open Braid_io in
  Switch.run @@ fun sw ->
  let stop = ref false and gap = ref 0 in
  let ticker =
    Fiber.fork ~sw (fun () ->
        let last = ref (Time.now_ns ()) in
        while not !stop do
          Time.sleep 0.001;
          let now = Time.now_ns () in
          gap := max !gap (now - !last);
          last := now
        done)
  in
  let cpu0 = cpu_s () and t0 = now_s () in
  work sw;
  let wall = now_s () -. t0 and cpu = cpu_s () -. cpu0 in
  stop := true;
  Fiber.join ticker;
  { wall; cpu; gap_ms = float !gap /. 1e6 }

let braid_small s pool =
  braid_measure pool (fun sw ->
      let workers =
        List.init fibers (fun w ->
            Braid_io.Fiber.fork ~sw (fun () ->
                List.iter
                  (fun i ->
                    let data = Braid_io.Path.load s.small.(i) in
                    assert (String.length data = small_size))
                  (shares fibers (Array.length s.small) w)))
      in
      List.iter Braid_io.Fiber.join workers)

let braid_large s pool =
  braid_measure pool (fun sw ->
      let file = Braid_io.File.open_in ~sw s.large in
      let chunks = s.large_size / chunk in
      let workers =
        List.init large_readers (fun w ->
            Braid_io.Fiber.fork ~sw (fun () ->
                let buf = Bytes.create chunk in
                List.iter
                  (fun c ->
                    Braid_io.File.pread_exact file buf 0 chunk
                      ~file_offset:(c * chunk))
                  (shares large_readers chunks w)))
      in
      List.iter Braid_io.Fiber.join workers;
      Braid_io.File.close file)

(* Lwt *)

let lwt_measure work =
  Lwt_main.run
    (let stop = ref false and gap = ref 0. in
     let rec tick last =
       if !stop then Lwt.return_unit
       else
         let* () = Lwt_unix.sleep 0.001 in
         let now = Unix.gettimeofday () in
         gap := Float.max !gap (now -. last);
         tick now
     in
     let ticker = tick (Unix.gettimeofday ()) in
     let cpu0 = cpu_s () and t0 = now_s () in
     let* () = work () in
     let wall = now_s () -. t0 and cpu = cpu_s () -. cpu0 in
     stop := true;
     let+ () = ticker in
     { wall; cpu; gap_ms = !gap *. 1e3 })

let lwt_small s =
  lwt_measure (fun () ->
      Lwt.join
        (List.init fibers (fun w ->
             Lwt_list.iter_s
               (fun i ->
                 let+ data =
                   Lwt_io.with_file ~mode:Lwt_io.Input s.small.(i) Lwt_io.read
                 in
                 assert (String.length data = small_size))
               (shares fibers (Array.length s.small) w))))

let lwt_large s =
  lwt_measure (fun () ->
      let* fd = Lwt_unix.openfile s.large [ O_RDONLY; O_CLOEXEC ] 0 in
      let chunks = s.large_size / chunk in
      let rec read_exactly buf off file_offset =
        if off < chunk then
          let* n = Lwt_unix.pread fd buf off (chunk - off) ~file_offset in
          if n = 0 then failwith "lwt: short file"
          else read_exactly buf (off + n) (file_offset + n)
        else Lwt.return_unit
      in
      let* () =
        Lwt.join
          (List.init large_readers (fun w ->
               let buf = Bytes.create chunk in
               Lwt_list.iter_s
                 (fun c -> read_exactly buf 0 (c * chunk))
                 (shares large_readers chunks w)))
      in
      Lwt_unix.close fd)

let rounds ~quick = if quick then 1 else 5

let summarise ~workload ~unit_name ~cpu_unit ~units samples_braid samples_lwt =
  let rate samples = median (List.map (fun s -> units /. s.wall) samples) in
  let cpu samples =
    median (List.map (fun s -> s.cpu *. 1e6 /. units) samples)
  in
  let gap samples =
    List.fold_left (fun m s -> Float.max m s.gap_ms) 0. samples
  in
  let rb = rate samples_braid and rl = rate samples_lwt in
  [
    row ("braid " ^ workload) unit_name rb unit_name;
    row ("lwt " ^ workload) unit_name rl unit_name;
    ratio ("braid/lwt " ^ workload) (rb /. rl);
    row ("braid " ^ workload) "cpu" (cpu samples_braid) cpu_unit;
    row ("lwt " ^ workload) "cpu" (cpu samples_lwt) cpu_unit;
    row ("braid " ^ workload) "longest loop stall" (gap samples_braid) "ms";
    row ("lwt " ^ workload) "longest loop stall" (gap samples_lwt) "ms";
  ]

let run ~quick =
  let s = setup ~quick in
  Fun.protect
    ~finally:(fun () -> remove s)
    (fun () ->
      Lwt_unix.set_pool_size threads;
      let pool = Braid_io.Blocking.create ~max_threads:threads () in
      Fun.protect
        ~finally:(fun () -> Braid_io.Blocking.shutdown pool)
        (fun () ->
          let small_b = ref [] and small_l = ref [] in
          let large_b = ref [] and large_l = ref [] in
          (* Warm-up, not measured: threads started on both sides. *)
          ignore (braid_small s pool);
          ignore (lwt_small s);
          for round = 1 to rounds ~quick do
            (* Interleaved, the first side alternating. *)
            let both a b =
              if round mod 2 = 0 then (
                a ();
                b ())
              else (
                b ();
                a ())
            in
            both
              (fun () -> small_b := braid_small s pool :: !small_b)
              (fun () -> small_l := lwt_small s :: !small_l);
            both
              (fun () -> large_b := braid_large s pool :: !large_b)
              (fun () -> large_l := lwt_large s :: !large_l)
          done;
          let files = float (Array.length s.small) in
          let mib = float s.large_size /. (1024. *. 1024.) in
          summarise ~workload:"small files" ~unit_name:"files/s"
            ~cpu_unit:"µs/file" ~units:files !small_b !small_l
          @ summarise ~workload:"large file" ~unit_name:"MiB/s"
              ~cpu_unit:"µs/MiB" ~units:mib !large_b !large_l
          @ [ load_row "at end" ]))

let experiment =
  {
    name = "file-io";
    summary =
      "reading 2,000 small files and a 64 MiB file from many fibers, Braid \
       (Blocking pool) vs Lwt (Lwt_io/Lwt_unix pool)";
    run;
  }
