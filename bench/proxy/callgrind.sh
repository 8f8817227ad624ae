#!/bin/sh
# User-space instructions per request of braid serve as a reverse proxy
# (ProxyPass / to an nginx upstream serving files): braid serve runs under
# callgrind while httperf sends N keep-alive requests of PATH over 10
# connections; the cost of starting and stopping an idle proxy is
# subtracted. Instruction counts do not depend on what else the machine is
# doing, as the proxy benchmark's wall-clock figures do.
#   bench/proxy/callgrind.sh [N] [PATH]   (needs valgrind, httperf, nginx)
#   PATH: /small.txt (14 bytes, the default) or /64k.bin
set -eu
N=${1:-5000}
DOC=${2:-/small.txt}
cd "$(dirname "$0")/../.."
. scripts/callgrind-lib.sh
dune build --profile release bin/main.exe
BIN=$PWD/_build/default/bin/main.exe
OUT=$(mktemp -d)
chmod 755 "$OUT"
mkdir "$OUT/root" "$OUT/nginx"
printf 'Hello, World!\n' >"$OUT/root/small.txt"
head -c 65536 /dev/urandom >"$OUT/root/64k.bin"
chmod -R a+rX "$OUT"
UP=$(free_port)
cat >"$OUT/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $OUT/nginx/nginx.pid;
error_log $OUT/nginx/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $OUT/nginx/body;
  proxy_temp_path $OUT/nginx/proxy;
  fastcgi_temp_path $OUT/nginx/fastcgi;
  uwsgi_temp_path $OUT/nginx/uwsgi;
  scgi_temp_path $OUT/nginx/scgi;
  server { listen 127.0.0.1:$UP; root $OUT/root; }
}
CONF
nginx -e "$OUT/nginx/error.log" -p "$OUT/nginx" -c "$OUT/nginx/nginx.conf" &
NGINX=$!
trap 'kill $NGINX 2>/dev/null; wait $NGINX 2>/dev/null; rm -rf "$OUT"' EXIT
echo "ProxyPass / http://127.0.0.1:$UP" >"$OUT/braid.conf"

load() {
  httperf --server 127.0.0.1 --port "$1" --uri "$DOC" --num-conns 10 \
    --num-calls $((N / 10)) --rate 10 --timeout 10 |
    grep -E '^(Reply status|Errors: total)' >&2
}

serve() {
  port=$(free_port)
  profile "$OUT" "$1" "$port" "$BIN" serve -p "$port" --config "$OUT/braid.conf"
}
base=$(serve idle)
total=$(serve load)
echo "braid serve, ProxyPass, $DOC: instructions per request: $(( (total - base) / N )) (N = $N; startup $base)"
