#!/bin/sh
# What an idle TLS connection costs the server (issue 39, item A): its
# resident set (VmRSS, and PSS) before and with N connections to the HTTPS
# port in each of three states, a fresh server for each state:
#   silent  connected, nothing sent (N_SILENT of them);
#   half    a ClientHello sent, then nothing (the server answered it and
#           waits for the client's Finished) (N_OTHER);
#   idle    a full handshake and one request answered, then nothing
#           (N_OTHER).
# The figure is (RSS with them - RSS before) / N, measured 3 s (SETTLE=s
# in the environment to change it) after the last one opened (the sweeper
# has looked twice: idle connections have parked and given their buffers
# back).
#   scripts/tls-idle-memory.sh [--binary PATH | --nginx] [N_SILENT] [N_OTHER]
# Default: this tree's braid (release build), 10000 and 2000. Needs python3
# and openssl; --nginx needs nginx (one worker; its worker is measured).
set -eu
cd "$(dirname "$0")/.."
SERVER=braid
BIN=
case "${1:-}" in
--binary) BIN=$2; shift 2 ;;
--nginx) SERVER=nginx; shift ;;
esac
if [ "$SERVER" = braid ] && [ -z "$BIN" ]; then
  dune build --profile release bin/main.exe
  BIN=$PWD/_build/default/bin/main.exe
fi
exec python3 - "$SERVER" "$BIN" "${1:-10000}" "${2:-2000}" <<'PY'
import os, resource, shutil, socket, ssl, subprocess, sys, tempfile, time
kind, binary, n_silent, n_other = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
settle = float(os.environ.get("SETTLE", "3"))
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
limit = hard if hard != resource.RLIM_INFINITY else 65536
resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
n_silent = min(n_silent, limit - 200)
n_other = min(n_other, limit - 200)
tmp = tempfile.mkdtemp(prefix="tls-idle-")
os.chmod(tmp, 0o755)  # nginx's worker runs unprivileged
cert, key = tmp + "/cert.pem", tmp + "/key.pem"
subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                "-subj", "/CN=a.test", "-days", "1"], check=True, capture_output=True)
os.chmod(key, 0o644)
root = tmp + "/root"; os.mkdir(root); os.chmod(root, 0o755)
open(root + "/s.txt", "w").write("small\n")

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def start():
    """The server; (its measured pid, its TLS port, a stop function)."""
    if kind == "braid":
        p = subprocess.Popen(["prlimit", "--nofile=%d" % limit, binary, "serve", "--root", root,
                              "--port", "0", "--tls-port", "0", "--tls-cert", cert, "--tls-key", key,
                              "--domains", "1", "--max-connections", str(limit - 100),
                              "--header-timeout", "300", "--keep-alive-timeout", "300"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        port = None
        while port is None:
            line = p.stdout.readline()
            if not line: raise SystemExit("braid did not start")
            if "serving https://127.0.0.1:" in line:
                port = int(line.split("https://127.0.0.1:")[1].split("/")[0])
        def stop(): p.terminate(); p.wait()
        return p.pid, port, stop
    port = free_port()
    conf = tmp + "/nginx.conf"
    open(conf, "w").write("""
daemon off; master_process on; worker_processes 1;
worker_rlimit_nofile %d; error_log %s/error.log; pid %s/nginx.pid;
events { worker_connections %d; }
http {
  access_log off; client_body_temp_path %s/body; proxy_temp_path %s/proxy;
  fastcgi_temp_path %s/fcgi; uwsgi_temp_path %s/uwsgi; scgi_temp_path %s/scgi;
  client_header_timeout 300s; keepalive_timeout 300s; keepalive_requests 1000;
  server {
    listen 127.0.0.1:%d ssl; ssl_certificate %s; ssl_certificate_key %s;
    root %s;
  }
}
""" % (limit, tmp, tmp, limit - 100, tmp, tmp, tmp, tmp, tmp, port, cert, key, root))
    p = subprocess.Popen(["prlimit", "--nofile=%d" % limit, "nginx", "-p", tmp, "-c", conf],
                         stderr=subprocess.DEVNULL)
    worker = None
    for _ in range(200):
        time.sleep(0.05)
        try:
            kids = open("/proc/%d/task/%d/children" % (p.pid, p.pid)).read().split()
        except OSError:
            kids = []
        if kids:
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                worker = int(kids[0]); break
            except OSError:
                pass
    if worker is None: raise SystemExit("nginx did not start")
    def stop(): p.terminate(); p.wait()
    return worker, port, stop

def memory(pid):
    rss = pss = 0
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"): rss = int(line.split()[1])
    for line in open("/proc/%d/smaps_rollup" % pid):
        if line.startswith("Pss:"): pss = int(line.split()[1])
    return rss * 1024, pss * 1024

client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
client.check_hostname = False
client.verify_mode = ssl.CERT_NONE

def client_hello():
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = client.wrap_bio(incoming, outgoing, server_hostname="a.test")
    try: obj.do_handshake()
    except ssl.SSLWantReadError: pass
    return outgoing.read()

def request(port):
    s = client.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="a.test")
    s.sendall(b"GET /s.txt HTTP/1.1\r\nHost: a.test\r\n\r\n")
    got = b""
    while not got.endswith(b"small\n"):
        chunk = s.recv(4096)
        if not chunk: raise SystemExit("closed before the answer: %r" % got)
        got += chunk
    return s

def silent(port): return socket.create_connection(("127.0.0.1", port))

hello = client_hello()
def half(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(hello)
    return s

print("%s: %s" % (kind, binary if kind == "braid" else "nginx, 1 worker"))
for name, n, opener in (("silent", n_silent, silent), ("half", n_other, half),
                        ("idle", n_other, request)):
    pid, port, stop = start()
    try:
        request(port).close()  # the code and the certificate's paths warmed
        time.sleep(3)
        rss0, pss0 = memory(pid)
        conns = [opener(port) for _ in range(n)]
        time.sleep(settle)
        rss1, pss1 = memory(pid)
        alive = request(port); alive.close()  # still serving
        print("  %-6s %6d connections: RSS %6.1f -> %6.1f MB, %7.0f B each (PSS %7.0f B each)"
              % (name, n, rss0 / 2**20, rss1 / 2**20, (rss1 - rss0) / n, (pss1 - pss0) / n))
        for c in conns: c.close()
    finally:
        stop()
shutil.rmtree(tmp, ignore_errors=True)
PY
