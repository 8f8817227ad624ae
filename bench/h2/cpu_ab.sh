#!/bin/sh
# Server CPU per request of two `braid serve` binaries, A and B, serving the
# same file over h2c, in interleaved rounds (A B, B A, A B, ...): each
# server on core 0, h2load on core 1; the server's user + system time from
# /proc across the measured requests, after a warm-up.
#
#   bench/h2/cpu_ab.sh A_EXE B_EXE [SIZE] [REQUESTS] [ROUNDS] [H2LOAD_ARGS]
#
# An exe named `h2o` is h2o (one thread, no access log) serving the same
# file: the reference. Prints one line per run (exe, round, us/request,
# req/s) and the medians.
set -eu
a=$1
b=$2
size=${3:-65536}
n=${4:-20000}
rounds=${5:-5}
load=${6:--c10 -m10}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# h2o serves as nobody: the file must be reachable.
chmod 755 "$dir"
mkdir "$dir/root"
head -c "$size" /dev/urandom >"$dir/root/f.bin"
tick=$(getconf CLK_TCK)

cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
sys() { awk '{ print $15 }' "/proc/$1/stat"; }

k=0
run() { # exe label round
  k=$((k + 1))
  port=$((20000 + ($$ * 7 + k) % 12000))
  if [ "$1" = h2o ]; then
    printf 'num-threads: 1\nlisten:\n  host: 127.0.0.1\n  port: %d\nhosts:\n  default:\n    paths:\n      /:\n        file.dir: %s\n' \
      "$port" "$dir/root" >"$dir/h2o.conf"
    taskset -c 0 h2o -c "$dir/h2o.conf" >"$dir/server.log" 2>&1 &
  else
    taskset -c 0 "$1" serve --domains 1 --root "$dir/root" --port "$port" \
      >"$dir/server.log" 2>&1 &
  fi
  pid=$!
  url="http://127.0.0.1:$port/f.bin"
  i=0
  until curl -s --http2-prior-knowledge -o /dev/null "$url"; do
    i=$((i + 1))
    [ "$i" -lt 100 ] || { cat "$dir/server.log"; exit 1; }
    sleep 0.05
  done
  # shellcheck disable=SC2086
  taskset -c 1 h2load -n 2000 $load "$url" >/dev/null
  before=$(cpu "$pid")
  sys_before=$(sys "$pid")
  # shellcheck disable=SC2086
  taskset -c 1 h2load -n "$n" $load "$url" >"$dir/h2load.txt"
  after=$(cpu "$pid")
  sys_after=$(sys "$pid")
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  grep -q "$n succeeded" "$dir/h2load.txt" || { cat "$dir/h2load.txt"; exit 1; }
  rps=$(awk '/^finished in/ { print $4 }' "$dir/h2load.txt")
  us=$(echo "($after - $before) * 1000000 / $tick / $n" | bc -l)
  sys_us=$(echo "($sys_after - $sys_before) * 1000000 / $tick / $n" | bc -l)
  printf '%s round %d: %.1f us/request (%.1f system), %s req/s\n' "$2" "$3" \
    "$us" "$sys_us" "$rps"
  echo "$us" >>"$dir/$2"
}

r=1
while [ "$r" -le "$rounds" ]; do
  if [ $((r % 2)) = 1 ]; then run "$a" A "$r"; run "$b" B "$r"
  else run "$b" B "$r"; run "$a" A "$r"; fi
  r=$((r + 1))
done
for x in A B; do
  printf '%s median: %.1f us/request\n' "$x" \
    "$(sort -n "$dir/$x" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')"
done
