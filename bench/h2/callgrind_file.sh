#!/bin/sh
# Instructions per request of `braid serve` answering a static file over
# h2c, counted by callgrind: the server on core 0, h2load on core 1, the
# counters zeroed after a warm-up and dumped after N requests.
#
#   bench/h2/callgrind_file.sh BRAID_EXE [SIZE_BYTES] [REQUESTS] [H2LOAD_ARGS]
#
# e.g. bench/h2/callgrind_file.sh _build/default/bin/main.exe 65536 2000 "-c1 -m1"
# Prints the instructions per request and the 15 functions with the most of
# their own (self cost), per request. Needs valgrind and h2load (nghttp2-client).
set -eu
exe=$1
size=${2:-65536}
n=${3:-2000}
load=${4:--c1 -m1}
dir=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$dir"' EXIT
mkdir "$dir/root"
head -c "$size" /dev/urandom >"$dir/root/f.bin"
port=$((20000 + $$ % 12000))
taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$dir/cg.%p" \
  "$exe" serve --domains 1 --root "$dir/root" --port "$port" \
  >"$dir/server.log" 2>&1 &
server=$!
url="http://127.0.0.1:$port/f.bin"
i=0
until curl -s --http2-prior-knowledge -o /dev/null "$url"; do
  i=$((i + 1))
  [ "$i" -lt 200 ] || { cat "$dir/server.log"; exit 1; }
  sleep 0.1
done
# shellcheck disable=SC2086
taskset -c 1 h2load -n 500 $load "$url" >/dev/null 2>&1
callgrind_control -z "$server" >/dev/null 2>&1
# shellcheck disable=SC2086
taskset -c 1 h2load -n "$n" $load "$url" >"$dir/h2load.txt"
grep -q "$n succeeded" "$dir/h2load.txt" || { cat "$dir/h2load.txt"; exit 1; }
callgrind_control -d "$server" >/dev/null 2>&1
sleep 1
out=$(ls -t "$dir"/cg.* | head -1)
cp "$out" "${CG_KEEP:-/dev/null}"
# callgrind_annotate's inclusive costs are nonsense across fiber stacks:
# self costs, summed by callgrind_self.py.
echo "requests $n ($load), file $size B:"
python3 "$(dirname "$0")/callgrind_self.py" "$out" "$n" 15
