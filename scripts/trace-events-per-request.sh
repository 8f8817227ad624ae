#!/bin/sh
# The trace events a request of the http benchmark's server writes: the
# static server (role braid-static) traced, under wrk -t1 -c100 for 3 s
# (server on core 0, wrk on core 1), its ring read for the middle second
# by test/trace/count_events.exe. Divide each count by "http end".
#   scripts/trace-events-per-request.sh [CONNECTIONS]   (needs wrk)
set -eu
C=${1:-100}
cd "$(dirname "$0")/.."
dune build --profile release bench/main.exe test/trace/count_events.exe
BIN=_build/default/bench/main.exe
. scripts/callgrind-lib.sh
PORT=$(free_port)
RING=$(mktemp -d)
trap 'rm -rf "$RING"' EXIT
BRAID_BENCH_ROLE=braid-static BRAID_BENCH_PORT=$PORT \
  BRAID_BENCH_ROOT="$PWD/examples/public" BRAID_TRACE_EVENTS=1 \
  OCAML_RUNTIME_EVENTS_DIR="$RING" taskset -c 0 "$BIN" >/dev/null 2>&1 &
pid=$!
until curl -s -o /dev/null "http://127.0.0.1:$PORT/1k.txt"; do sleep 0.2; done
taskset -c 1 wrk -t1 -c"$C" -d3s "http://127.0.0.1:$PORT/1k.txt" >/dev/null &
sleep 1
_build/default/test/trace/count_events.exe "$RING" "$pid" 1
wait $! || true
kill -TERM "$pid"
wait "$pid" || true
