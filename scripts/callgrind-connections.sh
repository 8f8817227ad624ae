#!/bin/sh
# User-space instructions per connection of `braid serve`: runs the release
# binary under callgrind while httperf opens N connections (one GET /1k.txt
# each), then subtracts the cost of starting and stopping an idle server.
#   scripts/callgrind-connections.sh [N]     (needs valgrind and httperf)
set -eu
N=${1:-2000}
cd "$(dirname "$0")/.."
dune build --profile release bin/main.exe
BIN=_build/default/bin/main.exe
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# Prints the instruction total of one callgrind run of the server, during
# which "$@" runs against it.
profile() {
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.$port" \
    "$BIN" serve --root examples/public --port "$port" >/dev/null 2>&1 &
  pid=$!
  until curl -s -o /dev/null "http://127.0.0.1:$port/1k.txt"; do sleep 0.5; done
  "$@" "$port"
  kill -INT "$pid"; wait "$pid" || true
  callgrind_annotate "$OUT/cg.$port" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
}

idle() { :; }
load() {
  httperf --server 127.0.0.1 --port "$1" --uri /1k.txt --num-conns "$N" \
    --rate 200 --num-calls 1 --timeout 5 | grep -E '^(Reply status|Errors: total)' >&2
}

base=$(profile idle)
total=$(profile load)
echo "instructions per connection: $(( (total - base) / N )) (N = $N; startup $base)"
