#!/bin/sh
# Per full TLS handshake, one server at a time, outside the benchmark's
# rounds: system calls (strace -c -f), user-space instructions by object
# (callgrind), and server CPU (user, system, and schedstat's total over all
# threads), with bench/tls's client (handshake_load.exe: a new connection
# and a new TLS 1.3 session per GET of a 1 KiB file, 16 at once).
#
#   bench/tls/per_handshake.sh syscalls|instructions|cpu SERVER...
#
# SERVER: LABEL=PATH (a braid binary, named LABEL in the output: braid serve
# --domains 1, HTTPS with a P-256 certificate made here) or nginx (one worker, master_process off, the
# same certificate and file). cpu runs ROUNDS (default 5) rounds of SECONDS
# (default 5) in which the servers take turns. Server on core 0, client on
# core 1, as bench/tls. Build first:
#   dune build --profile release bin/main.exe bench/tls/handshake_load.exe
set -e
what=$1
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
load=$root/_build/default/bench/tls/handshake_load.exe
lab=${LAB:-/tmp/braid-per-handshake}
rounds=${ROUNDS:-5}
seconds=${SECONDS_PER_RUN:-5}
mkdir -p "$lab/www" "$lab/tls" "$lab/nginx"
if [ ! -f "$lab/tls/cert.pem" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$lab/tls/key.pem" -out "$lab/tls/cert.pem" -days 2 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
  head -c 1024 /dev/urandom > "$lab/www/1k.bin"
fi
cat > "$lab/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
master_process off;
pid $lab/nginx/nginx.pid;
error_log $lab/nginx/error.log;
events { worker_connections 4096; }
http {
  types { text/plain txt; }
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $lab/nginx/body;
  proxy_temp_path $lab/nginx/proxy;
  fastcgi_temp_path $lab/nginx/fastcgi;
  uwsgi_temp_path $lab/nginx/uwsgi;
  scgi_temp_path $lab/nginx/scgi;
  server {
    listen 127.0.0.1:9443 ssl;
    ssl_certificate $lab/tls/cert.pem;
    ssl_certificate_key $lab/tls/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    root $lab/www;
  }
}
CONF

# The port and command line of SERVER.
port_of() { case $1 in nginx) echo 9443 ;; *) echo 9444 ;; esac; }
argv_of() {
  case $1 in
  nginx) echo "/usr/sbin/nginx -e $lab/nginx/error.log -p $lab/nginx -c $lab/nginx/nginx.conf" ;;
  *=*) echo "${1#*=} serve --domains 1 --host 127.0.0.1 --port 9080 --root $lab/www --tls-port 9444 --tls-cert $lab/tls/cert.pem --tls-key $lab/tls/key.pem --keep-alive-timeout 3600" ;;
  *) echo "unknown server $1" >&2; exit 2 ;;
  esac
}
label_of() { case $1 in nginx) echo nginx ;; *) echo "${1%%=*}" ;; esac; }

# Starts SERVER on core 0 (optionally under a wrapper) and waits for its port.
start() {
  port=$(port_of "$1")
  # shellcheck disable=SC2046
  taskset -c 0 $2 $(argv_of "$1") > "$lab/server.log" 2>&1 &
  pid=$!
  for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25; do
    ss -ltn | grep -q ":$port " && return 0
    sleep 0.2
  done
  echo "server $1 did not listen" >&2
  exit 1
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; }
client() { taskset -c 1 "$load" "$port" "$1" "${2:-16}"; }
completed() { awk '{print $2}'; }

case $what in
syscalls)
  for s in "$@"; do
    start "$s"
    client 1 > /dev/null
    strace -c -f -p "$pid" -o "$lab/strace.txt" 2> /dev/null &
    tracer=$!
    sleep 0.5
    client 3 > /dev/null
    sleep 0.3
    kill -INT $tracer
    wait $tracer || true
    stop
    # Per connection accepted (one TCP_NODELAY each), the loop's calls
    # (futex and pselect6 are other threads').
    awk -v l="$(label_of "$s")" '$1 ~ /^[0-9.]+$/ && $NF ~ /^[a-z_0-9]+$/ && $NF != "total" { c[$NF] = $4 }
      END { n = c["setsockopt"]; t = 0; for (k in c) if (k != "futex" && k != "pselect6") t += c[k];
        printf "%-8s %d connections; per connection: all %.1f", l, n, t / n;
        split("read recvfrom write epoll_ctl epoll_wait accept4 shutdown close getpid", ks, " ");
        for (i = 1; i <= 9; i++) if (ks[i] in c) printf ", %s %.2f", ks[i], c[ks[i]] / n; printf "\n" }' "$lab/strace.txt"
  done ;;
instructions)
  for s in "$@"; do
    out=$lab/callgrind.out
    rm -f "$out"*
    start "$s" "valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=$out"
    sleep 2
    callgrind_control -i on "$pid" > /dev/null
    n=$(client 40 4 | completed)
    callgrind_control -i off "$pid" > /dev/null
    callgrind_control -d "$pid" > /dev/null
    sleep 1
    stop
    echo "$(label_of "$s"): $n handshakes; user-space instructions per handshake, by object:"
    callgrind_annotate --threshold=100 "$out".* 2> /dev/null | awk -v n="$n" '
      /PROGRAM TOTALS/ { gsub(",", "", $1); total = $1 }
      /\[.*\]$/ { ir = $1; gsub(",", "", ir); o = $NF; gsub(/[][]/, "", o); sub(".*/", "", o); g[o] += ir }
      END { printf "  %-20s %10.0f\n", "total", total / n; for (o in g) printf "  %-20s %10.0f\n", o, g[o] / n }' | sort -k2 -rn
  done ;;
cpu)
  hz=$(getconf CLK_TCK)
  for r in $(seq 1 "$rounds"); do
    for s in "$@"; do
      start "$s"
      client 1 > /dev/null
      stat0=$(awk '{print $14, $15}' /proc/$pid/stat)
      sched0=$(cat /proc/$pid/task/*/schedstat | awk '{s += $1} END {print s}')
      n=$(client "$seconds" | completed)
      stat1=$(awk '{print $14, $15}' /proc/$pid/stat)
      sched1=$(cat /proc/$pid/task/*/schedstat | awk '{s += $1} END {print s}')
      stop
      echo "$stat0 $stat1 $sched0 $sched1" | awk -v l="$(label_of "$s")" -v r="$r" -v n="$n" -v hz="$hz" -v secs="$seconds" \
        -v load="$(cut -d' ' -f1 /proc/loadavg)" '{
        printf "round %d %-8s %7.1f handshakes/s  user %6.1f us  system %6.1f us  all threads %6.1f us per handshake  (load %s)\n",
          r, l, n / secs, ($3 - $1) * 1e6 / hz / n, ($4 - $2) * 1e6 / hz / n, ($6 - $5) / 1e3 / n, load }'
    done
  done ;;
*)
  echo "usage: $0 syscalls|instructions|cpu LABEL=PATH|nginx ..." >&2
  exit 2 ;;
esac
