#!/bin/sh
# A rolling restart of a three-instance cluster behind haproxy, under load:
# each `braid serve` in turn is stopped (SIGTERM: it stops listening and
# drains) and started again while wrk sends keep-alive requests through
# haproxy. Fails unless wrk saw no socket error and no non-2xx answer.
# With FRONT=braid, `braid serve` itself is the front (braid.conf: ProxyPass
# with active health checks) instead of haproxy.
#
#   [FRONT=haproxy|braid] examples/cluster/rolling-restart.sh [BRAID_EXECUTABLE] [SECONDS]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
braid=${1:-$here/../../_build/default/bin/main.exe}
seconds=${2:-8}
front=${FRONT:-haproxy}
for tool in haproxy wrk curl python3; do
  command -v $tool >/dev/null || { echo "rolling-restart: $tool is missing (make setup)" >&2; exit 1; }
done

dir=$(mktemp -d)
pids=""
cleanup() {
  for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM


head -c 1024 /dev/urandom > "$dir/1k.bin"
chmod -R a+rX "$dir"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
FRONT_PORT=$(free_port); BRAID_PORT_1=$(free_port); BRAID_PORT_2=$(free_port); BRAID_PORT_3=$(free_port)
export FRONT_PORT BRAID_PORT_1 BRAID_PORT_2 BRAID_PORT_3

healthy() { # port
  curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$1/health" 2>/dev/null | grep -q 200
}
wait_until() { # tries command...
  n=$1; shift
  until "$@"; do
    n=$((n - 1)); [ $n -gt 0 ] || return 1
    sleep 0.05
  done
}

start() { # instance number
  eval port=\$BRAID_PORT_$1
  "$braid" serve --root "$dir" --port "$port" --shutdown-timeout 10 --health /health \
    >> "$dir/braid$1.log" 2>&1 &
  echo $! > "$dir/braid$1.pid"
  pids="$pids $!"
  wait_until 200 healthy "$port" || { echo "instance $1 did not start" >&2; cat "$dir/braid$1.log" >&2; exit 1; }
}

for i in 1 2 3; do start $i; done
case "$front" in
  haproxy)
    haproxy -db -f "$here/haproxy.cfg" > "$dir/front.log" 2>&1 & ;;
  braid)
    sed -e "s/\${BRAID_PORT_1}/$BRAID_PORT_1/; s/\${BRAID_PORT_2}/$BRAID_PORT_2/; s/\${BRAID_PORT_3}/$BRAID_PORT_3/" \
      "$here/braid.conf" > "$dir/braid.conf"
    "$braid" serve --port "$FRONT_PORT" --config "$dir/braid.conf" > "$dir/front.log" 2>&1 & ;;
  *) echo "rolling-restart: FRONT is haproxy or braid" >&2; exit 2 ;;
esac
pids="$pids $!"
wait_until 200 healthy "$FRONT_PORT" || { echo "$front did not start" >&2; cat "$dir/front.log" >&2; exit 1; }

wrk -t1 -c20 -d"${seconds}s" "http://127.0.0.1:$FRONT_PORT/1k.bin" > "$dir/wrk.out" 2>&1 &
load=$!
sleep 1
for i in 1 2 3; do
  pid=$(cat "$dir/braid$i.pid")
  kill -TERM "$pid"
  wait "$pid" || { echo "instance $i did not exit 0" >&2; exit 1; }
  start $i
  sleep 0.5   # the front's check puts it back (every 200 ms)
done
wait $load || true

requests=$(awk '/requests in/ {print $1}' "$dir/wrk.out")
if grep -qE 'Socket errors|Non-2xx' "$dir/wrk.out" || [ -z "$requests" ]; then
  echo "rolling-restart: FAILED" >&2
  cat "$dir/wrk.out" >&2
  exit 1
fi
echo "rolling-restart: $requests requests through $front and 3 restarts, no error"
