#!/bin/sh
# braid_io's two backends side by side on `braid serve` (a 1 KiB static file,
# wrk keep-alive, 100 connections by default): per round and backend, the
# server's CPU per request (from /proc/PID/task/*/schedstat, over the wrk run
# only) and, in a second wrk run under `strace -c -f`, its system calls per
# request. Rounds alternate the backends' order, so a neighbour's load hits
# both. Server pinned to core 0, wrk to core 1.
#   bench/backends.sh [rounds] [seconds] [connections]
# BACKENDS (default "epoll uring") names the contenders; "uring-poll" is
# io_uring as a readiness poller only (BRAID_IO_URING_COMPLETION=0: reads
# and writes are system calls, as on epoll); "uring-defer" sets the ring
# up with IORING_SETUP_DEFER_TASKRUN (BRAID_IO_URING_DEFER=1).
# Needs a release build: dune build --profile release bin/main.exe
set -eu
ROUNDS=${1:-3}
SECONDS_PER_RUN=${2:-5}
CONNECTIONS=${3:-100}
BRAID=${BRAID:-_build/default/bin/main.exe}
ROOT=examples/public
PORT=${PORT:-18431}

cpu_ns() { # all threads of $1, in ns
  cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { printf "%d", s }'
}

ticks() { # user and system clock ticks of process $1 (all threads)
  awk '{ print $14, $15 }' /proc/"$1"/stat
}

requests() { # wrk's total from its summary line "N requests in ..."
  awk '/requests in/ { print $1 }'
}

one() { # $1: contender
  case $1 in
    uring-poll) backend=uring completion=0 defer=0 ;;
    uring-defer) backend=uring completion=1 defer=1 ;;
    *) backend=$1 completion=1 defer=0 ;;
  esac
  BRAID_IO_BACKEND=$backend BRAID_IO_URING_COMPLETION=$completion \
    BRAID_IO_URING_DEFER=$defer taskset -c 0 "$BRAID" serve --root "$ROOT" --port "$PORT" \
    --domains 1 --keep-alive-timeout 60 >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$PORT/1k.txt" && break
    sleep 0.05
  done
  url="http://127.0.0.1:$PORT/1k.txt"
  taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d1 "$url" >/dev/null # warm-up
  before=$(cpu_ns "$pid")
  ticks_before=$(ticks "$pid")
  n=$(taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$SECONDS_PER_RUN" "$url" | requests)
  after=$(cpu_ns "$pid")
  ticks_after=$(ticks "$pid")
  # The kernel's share of the server's CPU over the run.
  sys_share=$(echo "$ticks_before $ticks_after" |
    awk '{ u = $3 - $1; s = $4 - $2; printf "%.0f", (u + s) ? 100 * s / (u + s) : 0 }')
  out=$(mktemp)
  strace -c -f -q -o "$out" -p "$pid" &
  spid=$!
  sleep 0.5
  m=$(taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$SECONDS_PER_RUN" "$url" | requests)
  kill -INT "$spid"; wait "$spid" 2>/dev/null || true
  kill "$pid"; wait "$pid" 2>/dev/null || true
  calls=$(awk '/^------/ { d++; next } d == 1 && NF >= 5 { s += $4 } END { print s }' "$out")
  top=$(awk '/^------/ { d++; next } d == 1 && NF >= 5 { printf "%s %.3f, ", $NF, $4 / '"$m"' }' "$out")
  rm -f "$out"
  printf '%-10s req/s %8.0f  CPU/request %6.2f us (kernel %s %%)  syscalls/request %5.3f  (%s)\n' \
    "$1" "$(echo "$n / $SECONDS_PER_RUN" | bc -l)" \
    "$(echo "($after - $before) / $n / 1000" | bc -l)" "$sys_share" \
    "$(echo "$calls / $m" | bc -l)" "$top"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $CONNECTIONS connections, $SECONDS_PER_RUN s runs"
BACKENDS=${BACKENDS:-epoll uring}
for r in $(seq "$ROUNDS"); do
  # Odd rounds in the order given, even rounds reversed.
  order=$BACKENDS
  if [ $((r % 2)) = 0 ]; then
    order=$(echo "$BACKENDS" | tr ' ' '\n' | tac | tr '\n' ' ')
  fi
  for b in $order; do one "$b"; done
done
