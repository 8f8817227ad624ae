#!/bin/sh
# What request bodies cost the server in memory (issue 14.3), measured as its
# resident set (VmRSS) at each step:
#  1. one header-only request declaring Content-Length: 20000000000 (with
#     --max-body raised to allow it) to a route reading the whole body;
#  2. 900 uploads of 999,999 bytes to POST /reverse (which reads the whole
#     body), each held one byte short of complete; then each completed.
#   scripts/upload-memory.sh [UPLOADS]     (needs python3)
set -eu
UPLOADS=${1:-900}
cd "$(dirname "$0")/.."
dune build --profile release bin/main.exe
BIN=$PWD/_build/default/bin/main.exe
exec python3 - "$BIN" "$UPLOADS" <<'PY'
import os, resource, socket, subprocess, sys, time
binary, uploads = sys.argv[1], int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))

def start(*args):
    p = subprocess.Popen([binary, "serve", "--demo", "--port", "0", *args],
                         stdout=subprocess.PIPE, text=True)
    port = int(p.stdout.readline().split("http://127.0.0.1:")[1].split("/")[0])
    return p, port

def rss_mb(p):
    with open("/proc/%d/status" % p.pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
def settle(): time.sleep(1)

def head(size):
    return ("POST /reverse HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % size).encode()

# 1. A declared length, no body.
p, port = start("--max-body", "20000000000")
base = rss_mb(p)
s = socket.create_connection(("127.0.0.1", port))
s.sendall(head(20_000_000_000) + b"abc"); settle()
print("20 GB declared, 3 bytes sent: RSS %.1f MB (idle %.1f MB)" % (rss_mb(p), base))
s.close(); p.terminate(); p.wait()

# 2. Uploads held one byte short, then completed.
size = 999_999
body = b"x" * (size - 1)
p, port = start()
base = rss_mb(p)
conns = []
for _ in range(uploads):
    c = socket.create_connection(("127.0.0.1", port))
    c.sendall(head(size) + body)
    conns.append(c)
settle()
held = rss_mb(p)
print("%d uploads of %d bytes, each 1 byte short: RSS %.1f MB (idle %.1f MB): %.1f KiB per upload"
      % (uploads, size, held, base, (held - base) * 1024 / uploads))
for c in conns:
    c.sendall(b"x")
    got = b""
    while b"\r\n\r\n" not in got: got += c.recv(65536)
    h, _, rest = got.partition(b"\r\n\r\n")
    n = int([l for l in h.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
    while len(rest) < n: rest += c.recv(1 << 20)
    assert h.startswith(b"HTTP/1.1 200"), h
print("all %d completed and answered: RSS %.1f MB" % (uploads, rss_mb(p)))
for c in conns: c.close()
settle()
print("connections closed: RSS %.1f MB" % rss_mb(p))
p.terminate(); p.wait()
PY
