#!/usr/bin/env python3
"""A TLS handshake flood, and what it does to the other clients' latency.

The flood needs no crypto on the client's side: a few ClientHellos are made
once (Python's ssl module, into a MemoryBIO), then C raw TCP connections each
send one, read until the server's first flight arrives (the server has then
done its share: key exchange and signature), reset the connection and start
again, for a bounded time. Meanwhile a second process measures, every
--interval seconds:

  plain    a GET over a fresh plain-HTTP connection (connect included),
  https    a GET on an HTTPS keep-alive connection established before the
           flood,

and the flood counts the first flights it got (the server's handshake rate).

With --stalled N, N more connections each send half a ClientHello and stay
open (re-opened when the server closes them), to fill a server started with
--max-connections: then "evicted" counts the stalled connections the server
closed, and the probes show whether established connections suffer.

Servers: braid (the binary given by --braid, started here) or nginx (started
here, --nginx-workers 1 or auto), with the same self-signed certificate
(--key ec: ECDSA P-256, as test/server's certificates; --key rsa: RSA 2048),
and the same 612-byte file. Both are killed at the end. nginx is given
TLS 1.2 and 1.3 as Braid (--nginx-protocols; nginx 1.22's default lacks
TLS 1.3, and this flood then costs it about half the work). With OpenSSL 3.5
on both sides the key exchange is X25519MLKEM768.

  scripts/tls-handshake-flood.py --server braid --braid _build/default/bin/main.exe
  scripts/tls-handshake-flood.py --server nginx --nginx-workers auto
"""

import argparse
import errno
import json
import multiprocessing
import os
import random
import resource
import selectors
import shutil
import signal
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import time

BODY = b"<!DOCTYPE html>\n" + b"x" * 595 + b"\n"  # 612 bytes, like nginx's page


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_certificate(directory, key_type):
    key = os.path.join(directory, "key.pem")
    cert = os.path.join(directory, "cert.pem")
    newkey = (
        ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
        if key_type == "ec"
        else ["-newkey", "rsa:2048"]
    )
    subprocess.run(
        ["openssl", "req", "-x509", *newkey, "-nodes", "-days", "2",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
         "-keyout", key, "-out", cert],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.chmod(key, 0o644)  # nginx's workers run unprivileged
    return cert, key


def client_hellos(count):
    hellos = []
    for _ in range(count):
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        o = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
        try:
            o.do_handshake()
        except ssl.SSLWantReadError:
            pass
        hellos.append(outgoing.read())
    return hellos


def wait_port(port, deadline):
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on port {port}")


def start_braid(args, work, cert, key, http, https):
    command = [args.braid, "serve", "--host", "127.0.0.1", "--port", str(http),
               "--tls-port", str(https), "--tls-cert", cert, "--tls-key", key,
               "--root", os.path.join(work, "root"), "--metrics", "/metrics",
               ]
    if args.max_connections:
        command += ["--max-connections", str(args.max_connections)]
    command += args.braid_arg
    return subprocess.Popen(command, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(work, "braid.err"), "w"))


def start_nginx(args, work, cert, key, http, https):
    conf = os.path.join(work, "nginx.conf")
    limit = args.max_connections or 20000
    user = "user nobody nogroup;" if os.geteuid() == 0 else ""
    with open(conf, "w") as f:
        f.write(f"""{user}
worker_processes {args.nginx_workers};
daemon off;
pid {work}/nginx.pid;
error_log {work}/nginx.err warn;
worker_rlimit_nofile 65536;
events {{ worker_connections {limit}; }}
http {{
  access_log off;
  client_body_temp_path {work}/tmp; proxy_temp_path {work}/tmp;
  fastcgi_temp_path {work}/tmp; uwsgi_temp_path {work}/tmp;
  scgi_temp_path {work}/tmp;
  server {{
    listen 127.0.0.1:{http};
    listen 127.0.0.1:{https} ssl;
    ssl_protocols {args.nginx_protocols};
    ssl_certificate {cert};
    ssl_certificate_key {key};
    root {work}/root;
  }}
}}
""")
    return subprocess.Popen([args.nginx, "-c", conf, "-e", f"{work}/nginx.err"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# {1 Probes, in their own process: the flood's Python never delays them}

def read_response(sock, buf=b""):
    """One HTTP/1.1 response with a Content-Length; returns what follows."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before the head")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    if not head.startswith(b"HTTP/1.1 200"):
        raise ConnectionError(head.split(b"\r\n", 1)[0].decode(errors="replace"))
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed in the body")
        rest += chunk
    return rest[length:]


def https_connection(port):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return ctx.wrap_socket(raw, server_hostname="localhost")


def probe(http, https, start_at, stop_at, interval, results):
    request = b"GET /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n"
    closing = (b"GET /index.html HTTP/1.1\r\nHost: localhost\r\n"
               b"Connection: close\r\n\r\n")
    tls = https_connection(https)
    tls.sendall(request)
    read_response(tls)
    plain, secure, failures, reconnects = [], [], 0, 0
    failures_https = 0
    # Requests from the start, so that the HTTPS connection is never idle
    # for long; latencies are recorded once the flood is under way.
    next_at = time.monotonic()
    while next_at < stop_at:
        recording = time.monotonic() >= start_at
        t0 = time.perf_counter()
        try:
            with socket.create_connection(("127.0.0.1", http), timeout=5) as s:
                s.sendall(closing)
                read_response(s)
            if recording:
                plain.append(time.perf_counter() - t0)
        except OSError:
            failures += 1
        t0 = time.perf_counter()
        try:
            tls.sendall(request)
            read_response(tls)
            if recording:
                secure.append(time.perf_counter() - t0)
        except (OSError, ConnectionError, ValueError):
            # The server closed it (a request limit, an eviction): say so.
            reconnects += 1
            tls.close()
            try:
                tls = https_connection(https)
            except OSError:
                failures_https += 1
                tls = socket.socket()  # fails at once: reconnect next time
        # Jittered, so that the samples cannot keep step with a period of
        # the server's or the flood's.
        next_at += interval * random.uniform(0.5, 1.5)
        time.sleep(max(0.0, next_at - time.monotonic()))
    tls.close()
    results.put({"plain": plain, "https": secure, "plain_failures": failures,
                 "https_reconnects": reconnects,
                 "https_failures": failures_https})


# {1 The flood}

def reset(sock):
    # RST rather than FIN: no TIME_WAIT piles up on either side.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def flood(port, hellos, concurrency, stalled, stop_at, timeout):
    sel = selectors.DefaultSelector()
    stats = {"flights": 0, "timeouts": 0, "errors": 0, "evicted": 0,
             "stalled_open": 0}
    deadlines = {}
    counter = [0]

    def open_one(kind):
        s = socket.socket()
        s.setblocking(False)
        err = s.connect_ex(("127.0.0.1", port))
        if err not in (0, errno.EINPROGRESS):
            stats["errors"] += 1
            s.close()
            return False
        counter[0] += 1
        sel.register(s, selectors.EVENT_WRITE, [kind, "connecting",
                                                hellos[counter[0] % len(hellos)]])
        deadlines[s] = time.monotonic() + timeout
        return True

    def replace(s, kind):
        sel.unregister(s)
        deadlines.pop(s, None)
        reset(s)
        if time.monotonic() < stop_at:
            open_one(kind)

    for _ in range(stalled):
        open_one("stalled")
    for _ in range(concurrency):
        open_one("flood")
    last_sweep = time.monotonic()
    while time.monotonic() < stop_at:
        for key, events in sel.select(0.05):
            s, data = key.fileobj, key.data
            kind, phase, hello = data
            if phase == "connecting":
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    stats["errors"] += 1
                    replace(s, kind)
                    continue
                try:
                    # A stalled connection sends half its ClientHello.
                    s.send(hello if kind == "flood" else hello[: len(hello) // 2])
                except OSError:
                    stats["errors"] += 1
                    replace(s, kind)
                    continue
                data[1] = "sent"
                sel.modify(s, selectors.EVENT_READ, data)
                if kind == "stalled":
                    deadlines.pop(s, None)
                    stats["stalled_open"] += 1
                continue
            try:
                chunk = s.recv(65536)
            except OSError:
                chunk = b""
            if kind == "flood":
                stats["flights" if chunk else "errors"] += 1
            elif not chunk:
                stats["evicted"] += 1
                stats["stalled_open"] -= 1
            replace(s, kind)
        now = time.monotonic()
        if now - last_sweep > 0.05:
            last_sweep = now
            for s, deadline in list(deadlines.items()):
                if deadline < now:
                    stats["timeouts"] += 1
                    replace(s, sel.get_key(s).data[0])
    for key in list(sel.get_map().values()):
        reset(key.fileobj)
    return stats


def metric(http, name):
    try:
        with socket.create_connection(("127.0.0.1", http), timeout=5) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n"
                      b"Connection: close\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
    except OSError:
        return None
    total = 0.0
    for line in data.decode(errors="replace").splitlines():
        if line.startswith(name):
            total += float(line.rsplit(" ", 1)[1])
    return total


def cpu_seconds(pid):
    """User and system CPU of [pid] and its children so far (nginx's workers
    are children: their CPU is counted once they are reaped, so for nginx
    the workers' /proc entries are added)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pids = [pid]
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            pids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
        except OSError:
            pass
    return total


def quantiles(samples):
    if not samples:
        return {"n": 0}
    ms = sorted(x * 1000 for x in samples)
    return {"n": len(ms), "median": statistics.median(ms),
            "p90": ms[int(0.9 * len(ms))], "p99": ms[min(len(ms) - 1, int(0.99 * len(ms)))], "max": ms[-1]}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", choices=["braid", "nginx"], default="braid")
    p.add_argument("--braid", default="_build/default/bin/main.exe")
    p.add_argument("--braid-arg", action="append", default=[],
                   help="one more argument for braid serve (repeatable)")
    p.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    p.add_argument("--nginx-workers", default="1")
    # nginx 1.22's default is TLSv1 TLSv1.1 TLSv1.2: against TLS 1.2 this
    # flood costs the server about half (the ClientKeyExchange, with its half
    # of the key exchange, never comes). Braid serves TLS 1.2 and 1.3.
    p.add_argument("--nginx-protocols", default="TLSv1.2 TLSv1.3")
    p.add_argument("--key", choices=["ec", "rsa"], default="ec")
    p.add_argument("--concurrency", type=int, default=100)
    p.add_argument("--stalled", type=int, default=0)
    p.add_argument("--max-connections", type=int, default=0)
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--interval", type=float, default=0.02)
    p.add_argument("--timeout", type=float, default=1.0,
                   help="a flood connection waiting longer is dropped")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    # The stalled connections need descriptors: take the hard limit.
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    work = tempfile.mkdtemp(prefix="tls-flood-")
    os.chmod(work, 0o755)
    os.mkdir(os.path.join(work, "root"))
    os.mkdir(os.path.join(work, "tmp"))
    with open(os.path.join(work, "root", "index.html"), "wb") as f:
        f.write(BODY)
    os.chmod(os.path.join(work, "root", "index.html"), 0o644)
    cert, key = make_certificate(work, args.key)
    http, https = free_port(), free_port()
    start = start_braid if args.server == "braid" else start_nginx
    server = start(args, work, cert, key, http, https)
    try:
        deadline = time.monotonic() + 10
        wait_port(http, deadline)
        wait_port(https, deadline)
        hellos = client_hellos(8)
        counter = "braid_tls_handshakes_total"
        before = metric(http, counter) if args.server == "braid" else None
        stop_at = time.monotonic() + args.duration
        results = multiprocessing.Queue()
        prober = multiprocessing.Process(
            target=probe,
            args=(http, https, time.monotonic() + min(1.0, args.duration / 4),
                  stop_at, args.interval, results))
        prober.start()
        t0 = time.monotonic()
        cpu0, own0 = cpu_seconds(server.pid), time.process_time()
        stats = flood(https, hellos, args.concurrency, args.stalled, stop_at,
                      args.timeout)
        elapsed = time.monotonic() - t0
        server_cpu = (cpu_seconds(server.pid) - cpu0) / elapsed
        flood_cpu = (time.process_time() - own0) / elapsed
        measured = results.get(timeout=args.duration + 60)
        prober.join()
        after = metric(http, counter) if args.server == "braid" else None
        alive = server.poll() is None
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    report = {
        "server": args.server if args.server == "braid"
        else f"nginx workers={args.nginx_workers}",
        "key": args.key, "concurrency": args.concurrency,
        "stalled": args.stalled, "max_connections": args.max_connections,
        "load_average": os.getloadavg()[0],
        "handshakes_per_s": stats["flights"] / elapsed,
        "server_handshakes_per_s": (after - before) / elapsed
        if before is not None and after is not None else None,
        "server_cpu": server_cpu,
        # The host's other load takes CPU from the server: per CPU-second,
        # servers measured at different times compare.
        "handshakes_per_cpu_s": stats["flights"] / elapsed / server_cpu
        if server_cpu > 0 else None, "flood_cpu": flood_cpu,
        "flood": stats, "server_survived": alive,
        "plain_ms": quantiles(measured["plain"]),
        "https_ms": quantiles(measured["https"]),
        "plain_failures": measured["plain_failures"],
        "https_reconnects": measured["https_reconnects"],
        "https_failures": measured["https_failures"],
    }
    shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(report))
        return

    def fmt(q):
        if q["n"] == 0:
            return "no samples"
        return (f"median {q['median']:.1f} ms, p90 {q['p90']:.1f} ms, p99 {q['p99']:.1f} ms, "
                f"max {q['max']:.1f} ms ({q['n']} samples)")

    print(f"{report['server']}, {args.key} key, {args.concurrency} concurrent "
          f"ClientHellos, {args.stalled} stalled, {args.duration:.0f} s, "
          f"load average {report['load_average']:.2f}")
    print(f"  handshakes/s (first flights seen): {report['handshakes_per_s']:.0f}"
          + (f", server's counter: {report['server_handshakes_per_s']:.0f}"
             if report["server_handshakes_per_s"] is not None else ""))
    print(f"  flood: {stats}")
    print(f"  CPU (cores busy): server {server_cpu:.2f}, flood {flood_cpu:.2f}; "
          f"handshakes per server CPU-second: "
          f"{report['handshakes_per_cpu_s']:.0f}")
    print(f"  plain HTTP, fresh connection:  {fmt(report['plain_ms'])}"
          f", {report['plain_failures']} failed")
    print(f"  HTTPS keep-alive request:      {fmt(report['https_ms'])}"
          f", {report['https_reconnects']} reconnects"
          f" ({report['https_failures']} failed)")
    if not alive:
        print("  the server died during the run")
        sys.exit(1)


if __name__ == "__main__":
    main()
