#!/bin/sh
# Issue 39's bypass body against the example web application on a socket:
# 21 POSTs of a comment then 499,000 "[ " (998,005 bytes) to /api/notes with curl,
# the time of each and the server's RSS before and after. Loopback only; the
# server is stopped by its pid at the end.
#   dune build examples/webapp/main.exe && sh scripts/json-bypass.sh
set -eu
cd "$(dirname "$0")/.."
exe=${1:-_build/default/examples/webapp/main.exe}
n=${2:-21}
dir=$(mktemp -d)
python3 -c 'import sys; sys.stdout.write("/*\"*/" + "[ " * 499000)' >"$dir/body"
"$exe" 0 examples/webapp/public >"$dir/out" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
i=0
until port=$(sed -n 's/^webapp: port //p' "$dir/out" 2>/dev/null) && [ -n "$port" ]; do
  i=$((i + 1))
  [ "$i" -lt 100 ] || { echo "server did not start" >&2; exit 1; }
  sleep 0.05
done
rss() { awk '/^VmRSS/ {print $2 / 1024 " MB"}' "/proc/$pid/status"; }
echo "RSS before: $(rss)"
i=0
while [ "$i" -lt "$n" ]; do
  curl -s -o /dev/null -w '%{http_code} %{time_total}\n' \
    -H 'Content-Type: application/json' --data-binary "@$dir/body" \
    "http://127.0.0.1:$port/api/notes"
  i=$((i + 1))
done | sort -k2 -n | awk '{t[NR] = $2; c[$1]++} END {
  for (k in c) printf "status %s: %d\n", k, c[k];
  printf "time per request: min %.1f ms, median %.1f ms, max %.1f ms\n",
    1000 * t[1], 1000 * t[int((NR + 1) / 2)], 1000 * t[NR] }'
echo "RSS after $n requests: $(rss)"
