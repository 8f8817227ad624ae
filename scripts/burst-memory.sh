#!/bin/sh
# Whether the server gives memory back after a burst (issue 14.6): its
# resident set (VmRSS) idle, with N keep-alive connections each idle after
# one request, and after they all closed (waiting two seconds: the sweeper
# looks at least once a second).
#   scripts/burst-memory.sh [N]     (needs python3; default N = 5000)
set -eu
N=${1:-5000}
cd "$(dirname "$0")/.."
dune build --profile release bin/main.exe
BIN=$PWD/_build/default/bin/main.exe
exec python3 - "$BIN" "$N" <<'PY'
import resource, socket, subprocess, sys, time
binary, n = sys.argv[1], int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_NOFILE, (n + 1000, n + 1000))
p = subprocess.Popen(["prlimit", "--nofile=%d" % (n + 1000), binary, "serve",
                      "--root", "examples/public", "--port", "0",
                      "--max-connections", str(n + 100), "--keep-alive-timeout", "120"],
                     stdout=subprocess.PIPE, text=True)
port = int(p.stdout.readline().split("http://127.0.0.1:")[1].split("/")[0])
def rss_mb():
    for line in open("/proc/%d/status" % p.pid):
        if line.startswith("VmRSS:"): return int(line.split()[1]) / 1024
idle = rss_mb()
conns = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /1k.txt HTTP/1.1\r\nHost: x\r\n\r\n")
    conns.append(s)
for s in conns:
    got = b""
    while len(got) < 1024 or b"\r\n\r\n" not in got: got += s.recv(65536)
time.sleep(1)
busy = rss_mb()
print("idle %.1f MB; %d idle keep-alive connections: %.1f MB (%.0f bytes each)"
      % (idle, n, busy, (busy - idle) * 1048576 / n))
for s in conns: s.close()
time.sleep(2.5)
print("2.5 s after they closed: %.1f MB" % rss_mb())
p.terminate(); p.wait()
PY
