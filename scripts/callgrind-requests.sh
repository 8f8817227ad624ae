#!/bin/sh
# User-space instructions per keep-alive request of the benchmarks' Braid
# static-file server, with its pipeline looking its services up (one effect
# per request: role braid-static) and calling them directly (the baseline:
# braid-static-direct). Each role runs under callgrind while httperf sends
# N requests of GET /1k.txt over 10 keep-alive connections; the cost of
# starting and stopping an idle server is subtracted. Instruction counts
# do not depend on what else the machine is doing.
#   scripts/callgrind-requests.sh [N]     (needs valgrind and httperf)
set -eu
N=${1:-20000}
cd "$(dirname "$0")/.."
dune build --profile release bench/main.exe
BIN=_build/default/bench/main.exe
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# Prints the instruction total of one callgrind run of role $1, during which
# "$2" runs against it.
profile() {
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  BRAID_BENCH_ROLE=$1 BRAID_BENCH_PORT=$port BRAID_BENCH_ROOT=$PWD/examples/public \
    valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.$port" "$BIN" \
    >/dev/null 2>&1 &
  pid=$!
  until curl -s -o /dev/null "http://127.0.0.1:$port/1k.txt"; do sleep 0.5; done
  "$2" "$port"
  kill -TERM "$pid"; wait "$pid" || true
  callgrind_annotate "$OUT/cg.$port" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
}

idle() { :; }
load() {
  httperf --server 127.0.0.1 --port "$1" --uri /1k.txt --num-conns 10 \
    --num-calls $((N / 10)) --rate 10 --timeout 10 |
    grep -E '^(Reply status|Errors: total)' >&2
}

for role in braid-static braid-static-direct; do
  base=$(profile "$role" idle)
  total=$(profile "$role" load)
  echo "$role: instructions per request: $(( (total - base) / N )) (N = $N; startup $base)"
done
