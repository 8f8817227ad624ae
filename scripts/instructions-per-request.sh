#!/bin/bash
# User-space instructions per request of `braid serve`, counted by callgrind
# (deterministic where CPU time is not: this machine's CPU time per request
# moves 5-20 % between rounds, and it has no hardware counters for perf).
#
#   scripts/instructions-per-request.sh [BRAID_BINARY] [REQUESTS]
#
# One loop (--domains 1) serves a 1 KiB static file; ab sends 2,000 and then
# REQUESTS + 2,000 keep-alive GETs over 10 connections, each to a fresh server
# under callgrind; the difference of the two totals over REQUESTS is the cost
# of a request, start-up excluded. Needs valgrind and ab (apache2-utils).
# Compare two builds by running it with each binary (release profile:
# `dune build --profile release bin/main.exe`).
set -eu
bin=${1:-_build/default/bin/main.exe}
requests=${2:-20000}
work=$(mktemp -d /tmp/braid-instr.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/www"
head -c 1024 /dev/zero | tr '\0' 'x' > "$work/www/f.txt"

port_base=$((20000 + $$ % 20000))

# Total instructions of a server that answered N requests.
count() {
  local n=$1 port=$2 out="$work/cg.$2"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" serve \
    --root "$work/www" --port "$port" --domains 1 --log-level error \
    > "$work/vg.$port" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$port/f.txt" && break
    sleep 0.2
  done
  ab -q -k -n "$n" -c 10 "http://127.0.0.1:$port/f.txt" > "$work/ab.$port"
  if ! grep -q "^Failed requests: *0" "$work/ab.$port"; then
    kill -9 "$pid"; cat "$work/ab.$port" >&2
    echo "instructions-per-request: ab saw failed requests" >&2; exit 1
  fi
  # A dump while it runs: callgrind's own exit path can trip on the signal
  # that would stop the server.
  callgrind_control -d "$pid" > /dev/null 2>&1
  sleep 0.5
  kill -9 "$pid"; wait "$pid" 2> /dev/null || true
  cat "$out"* | awk '/^(summary|totals):/ { s += $2 } END { print s }'
}

small=$(count 2000 "$port_base")
large=$(count $((requests + 2000)) $((port_base + 1)))
echo "$(( (large - small) / requests )) instructions per request (user space, $requests keep-alive requests of 1 KiB, 10 connections, 1 loop)"
