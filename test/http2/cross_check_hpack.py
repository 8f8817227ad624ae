#!/usr/bin/env python3
"""Cross-checks braid_http2's HPACK against Python's hpack package.

Run by hand, not by `dune test` (hpack is not a project dependency):

    python3 -m venv /tmp/h2venv && /tmp/h2venv/bin/pip install hpack
    dune build test/http2/hpack_tool.exe
    /tmp/h2venv/bin/python test/http2/cross_check_hpack.py [blocks]

Each direction runs one connection's worth of random header lists (names
from browsers' and servers' usual fields plus made-up ones, values of
random bytes within RFC 9113's rules) through one encoder and one decoder,
so dynamic-table state and evictions are exercised too:
  Python hpack encodes, braid decodes; braid encodes, Python hpack decodes.
"""
import random
import subprocess
import sys

import hpack

TOOL = "_build/default/test/http2/hpack_tool.exe"
NAMES = [b"accept", b"accept-encoding", b"accept-language", b"cookie",
         b"user-agent", b"cache-control", b"content-type", b"date",
         b"set-cookie", b"authorization", b"x-request-id", b"etag",
         b"content-length", b"vary", b"server", b"referer"]
PSEUDO = [(b":method", [b"GET", b"POST", b"PUT"]),
          (b":path", [b"/", b"/index.html", b"/api/items?page=2"]),
          (b":scheme", [b"https", b"http"]),
          (b":authority", [b"example.com", b"www.example.com:8443"])]


def value(rng):
    # Any byte but NUL, CR and LF, without surrounding blanks.
    n = rng.choice([0, 1, 5, 20, 60, 200])
    body = bytes(rng.choice([c for c in range(1, 256) if c not in (10, 13)])
                 for _ in range(n))
    return body.strip(b" \t")


def header_list(rng):
    fields = [(n, rng.choice(vs)) for n, vs in PSEUDO if rng.random() < 0.8]
    for _ in range(rng.randint(0, 15)):
        name = rng.choice(NAMES) if rng.random() < 0.8 else \
            b"x-" + bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz-")
                          for _ in range(rng.randint(1, 20)))
        v = rng.choice([b"gzip, deflate, br", b"no-cache", b"*/*"]) \
            if rng.random() < 0.3 else value(rng)
        fields.append((name, v))
    return fields


def line(fields):
    return ",".join(n.hex() + ":" + v.hex() for n, v in fields)


def fields_of(text):
    if text == "":
        return []
    return [tuple(bytes.fromhex(x) for x in p.split(":")) for p in text.split(",")]


def run(mode, lines):
    out = subprocess.run([TOOL, mode], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    rng = random.Random(7541)
    lists = [header_list(rng) for _ in range(count)]

    # Python encodes, braid decodes.
    enc = hpack.Encoder()
    blocks = [enc.encode(fields, huffman=True).hex() for fields in lists]
    py_bytes = sum(len(b) // 2 for b in blocks)
    decoded = run("decode", blocks)
    bad = [i for i, (got, want) in enumerate(zip(decoded, lists))
           if got.startswith("error") or fields_of(got) != want]
    print(f"hpack -> braid: {count - len(bad)}/{count} blocks decoded identically")
    for i in bad[:3]:
        print("  mismatch", i, decoded[i][:200])

    # braid encodes, Python decodes.
    blocks = run("encode", [line(f) for f in lists])
    dec = hpack.Decoder()
    dec.max_header_list_size = 1 << 20
    bad2 = []
    for i, (block, want) in enumerate(zip(blocks, lists)):
        try:
            got = dec.decode(bytes.fromhex(block), raw=True)
            if [(n, v) for n, v in got] != want:
                bad2.append(i)
        except Exception as e:  # noqa: BLE001 - report whatever hpack says
            print("  hpack refused block", i, e)
            bad2.append(i)
            break
    print(f"braid -> hpack: {count - len(bad2)}/{count} blocks decoded identically")
    enc_bytes = sum(len(b) // 2 for b in blocks)
    print(f"encoded size of the {count} lists: braid {enc_bytes} bytes, "
          f"hpack {py_bytes} bytes")
    sys.exit(1 if bad or bad2 else 0)


if __name__ == "__main__":
    main()
