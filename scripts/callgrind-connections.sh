#!/bin/sh
# User-space instructions per connection of `braid serve`: runs the release
# binary under callgrind while httperf opens N connections (one GET /1k.txt
# each), then subtracts the cost of starting and stopping an idle server.
#   scripts/callgrind-connections.sh [N]     (needs valgrind and httperf)
set -eu
N=${1:-2000}
cd "$(dirname "$0")/.."
. scripts/callgrind-lib.sh
dune build --profile release bin/main.exe
BIN=_build/default/bin/main.exe
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

load() {
  httperf --server 127.0.0.1 --port "$1" --uri /1k.txt --num-conns "$N" \
    --rate 200 --num-calls 1 --timeout 5 | grep -E '^(Reply status|Errors: total)' >&2
}

serve() { port=$(free_port); profile "$OUT" "$1" "$port" "$BIN" serve --root examples/public --port "$port"; }
base=$(serve idle)
total=$(serve load)
echo "instructions per connection: $(( (total - base) / N )) (N = $N; startup $base)"
