#!/bin/sh
# Interleaved rounds of the benchmarks' static server (role braid-static)
# traced and untraced, as the http benchmark runs its contenders but with
# only these: a fresh server per run on core 0, wrk -t1 -c100 on core 1
# (a second's warm-up, then SECONDS), the order reversed every other
# round. Each CONTENDER is NAME:BIN:on|off, BIN a bench executable (any
# tree's), on meaning BRAID_TRACE_EVENTS=1 with nothing reading the ring.
# Prints, per run, req/s, the server's CPU time per request (/proc) and the
# load average.
#   scripts/trace-interleaved.sh ROUNDS SECONDS CONTENDER...   (needs wrk)
set -eu
ROUNDS=$1; SECS=$2; shift 2
cd "$(dirname "$0")/.."
RING=$(mktemp -d)
run() { # name bin traced
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  if [ "$3" = on ]; then T="BRAID_TRACE_EVENTS=1 OCAML_RUNTIME_EVENTS_DIR=$RING"; else T=""; fi
  env $T BRAID_BENCH_ROLE=braid-static BRAID_BENCH_PORT=$PORT BRAID_BENCH_ROOT=$PWD/examples/public \
    taskset -c 0 $2 >/dev/null 2>&1 &
  pid=$!
  until curl -s -o /dev/null "http://127.0.0.1:$PORT/1k.txt"; do sleep 0.1; done
  taskset -c 1 wrk -t1 -c100 -d1s http://127.0.0.1:$PORT/1k.txt >/dev/null
  t0=$(awk '{print $14+$15}' /proc/$pid/stat)
  out=$(taskset -c 1 wrk -t1 -c100 -d${SECS}s http://127.0.0.1:$PORT/1k.txt)
  t1=$(awk '{print $14+$15}' /proc/$pid/stat)
  kill -TERM $pid; wait $pid 2>/dev/null || true
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  tck=$(getconf CLK_TCK)
  cpu=$(python3 -c "print('%.3f' % (($t1-$t0)/$tck*1e6/$reqs))")
  echo "$1 rps=$rps cpu_us=$cpu load=$(cut -d' ' -f1 /proc/loadavg)"
}
FWD="$*"; REV=$(for x in "$@"; do echo "$x"; done | tac | tr '\n' ' ')
for r in $(seq 1 $ROUNDS); do
  if [ $((r % 2)) = 1 ]; then L=$FWD; else L=$REV; fi
  for c in $L; do
    name=${c%%:*}; rest=${c#*:}; bin=${rest%:*}; mode=${rest##*:}
    run "$name" "$bin" "$mode"
  done
done
rm -rf "$RING"
