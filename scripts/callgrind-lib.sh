# Shared by the callgrind-*.sh scripts (sourced, not run).

# A port of 127.0.0.1 that was free a moment ago.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# profile OUT_DIR LOAD PORT COMMAND...: prints the instruction total of one
# callgrind run of COMMAND (a server listening on PORT), during which the
# function LOAD runs with PORT as its argument.
profile() {
  out=$1; load=$2; port=$3; shift 3
  valgrind --tool=callgrind --callgrind-out-file="$out/cg.$port" \
    "$@" >/dev/null 2>&1 &
  pid=$!
  until curl -s -o /dev/null "http://127.0.0.1:$port/1k.txt"; do sleep 0.5; done
  "$load" "$port"
  kill -TERM "$pid"; wait "$pid" || true
  callgrind_annotate "$out/cg.$port" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
}

idle() { :; }
