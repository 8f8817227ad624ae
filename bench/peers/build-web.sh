#!/usr/bin/env bash
# Builds the peers of the `web` benchmark (bench/web) into bench/peers/_build/
# (git-ignored; dune skips directories starting with _):
#   bench/peers/_build/web-go     Go net/http + pgx (pgxpool)
#   bench/peers/_build/web-rust   Rust axum + tokio-postgres + deadpool-postgres
# Go modules come from the Go module proxy, crates from crates.io.
# Usage: bench/peers/build-web.sh [go|rust]...   (default: both)
# Builds run under nice; the Rust one takes a few minutes on 2 cores.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/_build"
mkdir -p "$out"
go_bin="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
cargo_bin="${CARGO:-$(command -v cargo || echo "$HOME/.cargo/bin/cargo")}"

build_go() {
  echo "build-web: Go peer with $("$go_bin" version)"
  (cd "$here/web-go" && nice -n 10 "$go_bin" build -trimpath -o "$out/web-go" .)
  # What the benchmark's table names the peer by.
  echo "go: $("$go_bin" env GOVERSION), net/http, pgx $(awk '{for (i = 1; i < NF; i++) if ($i == "github.com/jackc/pgx/v5") print $(i + 1)}' "$here/web-go/go.mod")" \
    >"$out/web-go.version"
}

build_rust() {
  echo "build-web: Rust peer with $("$cargo_bin" --version)"
  (cd "$here/web-rust" &&
    CARGO_TARGET_DIR="$out/web-rust-target" nice -n 10 "$cargo_bin" build --release --locked)
  cp "$out/web-rust-target/release/web-rust" "$out/web-rust"
  crate() { awk -v n="$1" '$0 == "name = \"" n "\"" {getline; gsub(/[^0-9.]/, ""); print; exit}' "$here/web-rust/Cargo.lock"; }
  rustc_bin="$(dirname "$cargo_bin")/rustc"
  [ -x "$rustc_bin" ] || rustc_bin=rustc
  echo "rust: $("$rustc_bin" --version | awk '{print $2}'), axum $(crate axum), tokio $(crate tokio), tokio-postgres $(crate tokio-postgres), deadpool-postgres $(crate deadpool-postgres)" \
    >"$out/web-rust.version"
}

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(go rust)
for t in "${targets[@]}"; do
  case "$t" in
    go) build_go ;;
    rust) build_rust ;;
    *) echo "build-web: unknown peer $t (go or rust)" >&2; exit 2 ;;
  esac
done
echo "build-web: built in $out"
