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
. scripts/callgrind-lib.sh
dune build --profile release bench/main.exe
BIN=_build/default/bench/main.exe
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

load() {
  httperf --server 127.0.0.1 --port "$1" --uri /1k.txt --num-conns 10 \
    --num-calls $((N / 10)) --rate 10 --timeout 10 |
    grep -E '^(Reply status|Errors: total)' >&2
}

export BRAID_BENCH_ROOT="$PWD/examples/public"
for role in braid-static braid-static-direct; do
  export BRAID_BENCH_ROLE=$role
  serve() {
    export BRAID_BENCH_PORT=$(free_port)
    profile "$OUT" "$1" "$BRAID_BENCH_PORT" "$BIN"
  }
  base=$(serve idle)
  total=$(serve load)
  echo "$role: instructions per request: $(( (total - base) / N )) (N = $N; startup $base)"
done
