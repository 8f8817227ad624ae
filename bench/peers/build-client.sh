#!/usr/bin/env bash
# Builds the peer of the `client` benchmark (bench/proxy) into
# bench/peers/_build/client-go (git-ignored; dune skips directories starting
# with _): Go's net/http client, the standard library only (no module
# download). Usage: bench/peers/build-client.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/_build"
mkdir -p "$out"
go_bin="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
echo "build-client: Go peer with $("$go_bin" version)"
(cd "$here/client-go" && GOFLAGS=-mod=mod nice -n 10 "$go_bin" build -trimpath -o "$out/client-go" .)
# What the benchmark's table names the peer by.
echo "go: $("$go_bin" env GOVERSION), net/http client" >"$out/client-go.version"
echo "build-client: built $out/client-go"
