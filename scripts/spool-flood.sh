#!/bin/sh
# The spool flood (issue 39, G): N clients each send a request head declaring
# a 4 MB body and 1 MB of it, then hold. A whole-body read spools what passes
# its 64 KiB buffer to an unlinked temporary file, so before the spool budget
# the server's temporary files grew to N x 1 MB. Measured 3 s after the last
# client sent (10 s at most in all): the bytes allocated to the temporary
# files the server holds open (st_blocks of /proc/PID/fd/*, the files being
# unlinked), how many clients were refused (an answer or a reset), and
# whether a GET is still answered meanwhile. For:
#   - Braid as built here, with its default budget and with --body-spool-budget;
#   - another braid binary, e.g. main's before the budget ($BEFORE);
#   - nginx (client_body_buffer_size 64k, bodies to client_body_temp_path,
#     proxy_pass with request buffering: the body is read whole first).
#   scripts/spool-flood.sh [CLIENTS]   (default 2000; needs python3, nginx)
#   BEFORE=/path/to/old/main.exe scripts/spool-flood.sh
# Build main's binary for BEFORE, e.g.:
#   git archive MAIN_COMMIT | tar -x -C /tmp/braid-before &&
#   (cd /tmp/braid-before && dune build --profile release bin/main.exe)
set -eu
CLIENTS=${1:-2000}
cd "$(dirname "$0")/.."
dune build --profile release bin/main.exe
BIN=$PWD/_build/default/bin/main.exe
exec python3 - "$BIN" "$CLIENTS" "${BEFORE:-}" <<'PY'
import os, resource, shutil, signal, socket, subprocess, sys, tempfile, time
binary, clients, before = sys.argv[1], int(sys.argv[2]), sys.argv[3]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
DECLARED, SENT = 4_000_000, 1_000_000
HEAD = ("POST /reverse HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
        % DECLARED).encode()
PIECE = b"u" * SENT

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close()
    return p

def wait_port(port, proc):
    for _ in range(200):
        if proc.poll() is not None: sys.exit("server exited: %d" % proc.returncode)
        try: socket.create_connection(("127.0.0.1", port), timeout=1).close(); return
        except OSError: time.sleep(0.05)
    sys.exit("server never listened")

def spooled(pids, tmp):
    """Bytes allocated to the files under [tmp] that [pids] hold open."""
    total, files = 0, 0
    for pid in pids:
        d = "/proc/%d/fd" % pid
        for fd in os.listdir(d):
            try:
                target = os.readlink(os.path.join(d, fd))
                if target.startswith(tmp):
                    total += os.stat(os.path.join(d, fd)).st_blocks * 512; files += 1
            except OSError: pass
    return total, files

def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError: return []

def get_ok(port):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /fib/10 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        line = s.recv(64).split(b"\r\n")[0].decode(); s.close(); return line
    except OSError as e: return "no answer (%s)" % e

def flood(name, port, pids, tmp):
    start = time.monotonic()
    conns, refused = [], 0
    for _ in range(clients):
        if time.monotonic() - start > 7: break
        c = socket.create_connection(("127.0.0.1", port))
        c.settimeout(5)
        try: c.sendall(HEAD + PIECE)
        except OSError: refused += 1
        conns.append(c)
    time.sleep(3)
    # An answer already there (503/413), or a reset: refused.
    answers = {}
    for c in conns:
        c.setblocking(False)
        try:
            data = c.recv(64)
            if data:
                st = data.split(b"\r\n")[0].decode(errors="replace")
                answers[st] = answers.get(st, 0) + 1
        except BlockingIOError: pass
        except OSError: refused += 1
    held, files = spooled(pids, tmp)
    meanwhile = get_ok(port)
    for c in conns: c.close()
    print("%-34s %4d clients in %.1f s: %7.1f MB in %4d temp files; answers %s, resets %d; GET meanwhile: %s"
          % (name, len(conns), time.monotonic() - start, held / 1e6, files,
             answers or "none", refused, meanwhile), flush=True)

def braid(name, exe, *args):
    tmp = tempfile.mkdtemp(prefix="spool-flood-braid-")
    port = free_port()
    env = dict(os.environ, TMPDIR=tmp)
    p = subprocess.Popen([exe, "serve", "--demo", "--port", str(port),
                          "--max-body", str(DECLARED), *args],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, p)
        flood(name, port, [p.pid], tmp)
    finally:
        p.terminate(); p.wait(); shutil.rmtree(tmp, ignore_errors=True)

def nginx():
    exe = shutil.which("nginx")
    if not exe: print("nginx: not installed, skipped"); return
    tmp = tempfile.mkdtemp(prefix="spool-flood-nginx-")
    os.chmod(tmp, 0o777)
    port = free_port()
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write("""
worker_processes 1;
worker_rlimit_nofile %d;
daemon off;
pid %s/nginx.pid;
error_log %s/error.log crit;
events { worker_connections %d; }
http {
  access_log off;
  client_max_body_size %d;
  client_body_buffer_size 64k;
  client_body_temp_path %s/body;
  proxy_temp_path %s/proxy;
  server {
    listen 127.0.0.1:%d;
    location = /fib/10 { return 200 "55\\n"; }
    # The upstream is never reached: the bodies never complete.
    location / { proxy_pass http://127.0.0.1:9; }
  }
}
""" % (hard, tmp, tmp, clients + 64, DECLARED, tmp, tmp, port))
    p = subprocess.Popen([exe, "-c", conf, "-p", tmp],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, p)
        time.sleep(0.2)
        flood("nginx 1.22 (1 worker)", port, [p.pid] + children(p.pid), tmp)
    finally:
        p.terminate(); p.wait(); shutil.rmtree(tmp, ignore_errors=True)

if before: braid("braid before (%s)" % os.path.basename(before), before)
braid("braid, default budget", binary)
braid("braid, --body-spool-budget 256 MB", binary, "--body-spool-budget", "256000000")
nginx()
PY
