#!/bin/sh
# User-space instructions per keep-alive GET /1k.txt of the benchmarks'
# Braid static-file server (role braid-static), its trace events off and on
# (BRAID_TRACE_EVENTS=1, nothing reading the ring), counted by callgrind as
# scripts/callgrind-requests.sh counts them: N requests over C connections,
# the cost of starting and stopping an idle server subtracted. BIN is the
# bench executable (default: this tree's, built); give another tree's to
# compare. The whole-program counts move by up to 3,000 a request between
# runs (docs/tracing.md, Overhead): compare the per-function counts of the
# profiles it keeps (callgrind_annotate OUT/off.cg OUT/on.cg).
#   scripts/callgrind-trace.sh [N] [C] [BIN] [OUT]   (needs valgrind, httperf)
set -eu
N=${1:-20000}
C=${2:-10}
cd "$(dirname "$0")/.."
. scripts/callgrind-lib.sh
if [ -z "${3:-}" ]; then dune build --profile release bench/main.exe; fi
BIN=${3:-_build/default/bench/main.exe}
KEEP=${4:-$(mktemp -d)}
RING=$(mktemp -d)
trap 'rm -rf "$RING"' EXIT

load() {
  httperf --server 127.0.0.1 --port "$1" --uri /1k.txt --num-conns "$C" \
    --num-calls $((N / C)) --rate "$C" --timeout 10 |
    grep -E '^(Reply status|Errors: total)' >&2
}

export BRAID_BENCH_ROOT="$PWD/examples/public" BRAID_BENCH_ROLE=braid-static
for mode in off on; do
  if [ "$mode" = on ]; then
    export BRAID_TRACE_EVENTS=1 OCAML_RUNTIME_EVENTS_DIR="$RING"
  fi
  export BRAID_BENCH_PORT=$(free_port)
  base=$(profile "$KEEP" idle "$BRAID_BENCH_PORT" "$BIN")
  export BRAID_BENCH_PORT=$(free_port)
  total=$(profile "$KEEP" load "$BRAID_BENCH_PORT" "$BIN")
  mv "$KEEP/cg.$BRAID_BENCH_PORT" "$KEEP/$mode.cg"
  echo "trace $mode: instructions per request: $(( (total - base) / N )) (N = $N, $C connections; profile $KEEP/$mode.cg)"
done
