#!/bin/sh
# A client holding the server's whole connection limit (issue 39 H): wrk
# with as many keep-alive connections as --max-connections allows, and 99 %
# of it, against the same load with room to spare (five times the limit).
# Before the accept-first admission, the limit alone made the server close
# connections between two of their requests: wrk counted read errors.
#   scripts/limit-cliff.sh [LIMIT] [ROUNDS] [BINARY]
#   (defaults 1000, 3, this tree's braid built with --profile release)
# Prints one line per run: limit, connections, req/s, socket errors.
set -eu
LIMIT=${1:-1000}
ROUNDS=${2:-3}
cd "$(dirname "$0")/.."
if [ -n "${3:-}" ]; then BIN=$3; else
  dune build --profile release bin/main.exe
  BIN=$PWD/_build/default/bin/main.exe
fi
command -v wrk >/dev/null || { echo "limit-cliff: wrk is needed" >&2; exit 1; }
ulimit -n 65536 2>/dev/null || true
run() { # limit connections
  out=$(mktemp)
  "$BIN" serve --demo --port 0 --max-connections "$1" \
    --error-log /dev/null >"$out" 2>/dev/null &
  pid=$!
  i=0
  until grep -q 'http://' "$out" || [ $i -gt 100 ]; do sleep 0.05; i=$((i + 1)); done
  port=$(sed -n 's|.*http://[^:]*:\([0-9]*\)/.*|\1|p' "$out" | head -n 1)
  report=$(wrk -t2 -c"$2" -d5s "http://127.0.0.1:$port/" 2>&1)
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -f "$out"
  rps=$(printf '%s\n' "$report" | awk '/Requests\/sec/ {print $2}')
  errors=$(printf '%s\n' "$report" | awk '/Socket errors/ {print $0}')
  printf 'limit %6d  connections %6d  %10s req/s  %s\n' "$1" "$2" "$rps" \
    "${errors:-no socket errors}"
}
NINETY_NINE=$((LIMIT * 99 / 100))
r=1
while [ $r -le "$ROUNDS" ]; do
  echo "round $r"
  run "$LIMIT" "$LIMIT"
  run "$LIMIT" "$NINETY_NINE"
  run $((LIMIT * 5)) "$LIMIT"
  r=$((r + 1))
done
