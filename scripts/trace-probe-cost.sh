#!/bin/sh
# User-space instructions per call of Braid's trace probes, events on and
# nothing reading the ring: test/trace/probe_cost.exe under callgrind, N
# iterations of each probe, less the same loop with the probes off.
#   scripts/trace-probe-cost.sh [N]     (needs valgrind)
set -eu
N=${1:-200000}
cd "$(dirname "$0")/.."
dune build --profile release test/trace/probe_cost.exe
BIN=_build/default/test/trace/probe_cost.exe
OUT=$(mktemp -d)
export OCAML_RUNTIME_EVENTS_DIR="$OUT"
trap 'rm -rf "$OUT"' EXIT
count() {
  valgrind --tool=callgrind --callgrind-out-file="$OUT/cg" "$BIN" "$1" "$N" \
    >/dev/null 2>&1
  callgrind_annotate "$OUT/cg" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
}
base=$(count none)
for what in run suspend http sleep; do
  echo "$what: $(( ($(count "$what") - base) / N )) instructions per iteration (N = $N)"
done
