(** Benchmark [file-io]: file reads from many fibers at once, Braid
    ([Braid_io.Path], [Braid_io.File], whose calls run on the [Blocking] pool)
    next to Lwt ([Lwt_io], [Lwt_unix], whose calls run on Lwt's own pool of
    systhreads), in the same process and the same run, rounds interleaved.

    - [small files]: 100 fibers (Lwt threads) read 2,000 files of 4 KiB, each
      whole (open, read, close): files per second, process CPU µs per file.
    - [large file]: 8 fibers read a 64 MiB file in 256 KiB chunks at offsets
      ([pread]): MB/s, process CPU µs per MiB.

    Files are read from the page cache (written just before, read once to warm
    it): the figures are the cost of the machinery around the system calls, not
    of a disk. Both pools get 16 threads. Meanwhile a ticker fiber (an Lwt
    thread) asks to wake every millisecond: the longest gap between two of its
    wake-ups shows whether the loop ever stalled. *)

val experiment : Bench_harness.experiment
