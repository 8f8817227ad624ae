#!/bin/sh
# Installs everything Braid needs: OCaml 5.3, dune, the OCaml libraries and the
# measuring tools. Idempotent: what is already installed is skipped.
#   Debian 12: adds Debian 13 (trixie) with Pin-Priority 100 and installs from it.
#   Debian 13: installs from its own suite.
#   A machine with opam and no apt: installs the libraries with opam.
set -eu

OCAML_LIBS="saturn backoff multicore-magic lwt angstrom alcotest qcheck qcheck-stm
qcheck-lin dscheck cmdliner logs fmt mtime ptime uri cohttp-lwt-unix crowbar
bigstringaf cstruct magic-mime sha base64 mdx yojson odoc ssl tyxml postgresql sqlite3"
DEB_LIBS="ocaml-nox ocaml-dune ocaml-findlib ocamlformat libsaturn-ocaml-dev
libbackoff-ocaml-dev libmulticore-magic-ocaml-dev liblwt-ocaml-dev
libangstrom-ocaml-dev libalcotest-ocaml-dev libqcheck-ocaml-dev
libqcheck-stm-ocaml-dev libqcheck-lin-ocaml-dev libdscheck-ocaml-dev
libcmdliner-ocaml-dev liblogs-ocaml-dev libfmt-ocaml-dev libmtime-ocaml-dev
libptime-ocaml-dev liburi-ocaml-dev libcohttp-lwt-unix-ocaml-dev
libcrowbar-ocaml-dev libbigstringaf-ocaml-dev libcstruct-ocaml-dev
libmagic-mime-ocaml-dev libsha-ocaml-dev libbase64-ocaml-dev libmdx-ocaml-dev
libyojson-ocaml-dev ocaml-odoc libssl-ocaml-dev openssl libtyxml-ocaml-dev
libpostgresql-ocaml-dev libsqlite3-ocaml-dev"
# Tools from the base suite: load generators, peers and the report's charts;
# python3-websockets is the real WebSocket client of the server's tests;
# chromium, chromium-driver and python3-selenium run the browser test
# (test/browser); postgresql is the server test/db starts in a temporary
# directory. liburing-dev is what braid_io's io_uring backend is built on
# (lib/io/uring_stubs.c; from the base suite: Debian 12's 2.3 is enough).
# libnghttp2-dev is the peer of the hpack benchmark (bench/hpack), which
# dune builds with the rest.
DEB_TOOLS="liburing-dev libnghttp2-dev curl wrk httperf apache2-utils nginx h2o gnuplot-nox python3
python3-websockets procps systemd haproxy chromium chromium-driver
python3-selenium postgresql nghttp2-client"

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || die "run as root or install sudo"
  SUDO="sudo"
fi

ocaml_ok() {
  command -v ocamlfind >/dev/null 2>&1 && command -v dune >/dev/null 2>&1 &&
    case "$(ocamlfind ocamlc -version 2>/dev/null)" in 5.3.*|5.[4-9].*) true ;; *) false ;; esac
}

missing_debs() {
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || printf '%s ' "$p"
  done
}

setup_trixie_pin() {
  if ! grep -rqs 'trixie' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    say "adding the Debian 13 (trixie) suite with a low pin"
    $SUDO tee /etc/apt/sources.list.d/braid-trixie.sources >/dev/null <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  if ! grep -rqs 'n=trixie' /etc/apt/preferences.d/; then
    $SUDO tee /etc/apt/preferences.d/braid-trixie >/dev/null <<PIN
Package: *
Pin: release n=trixie
Pin-Priority: 100
PIN
  fi
}

apt_install() { # $1: target suite or "", rest: packages
  suite=$1; shift
  [ -n "$*" ] || return 0
  if [ "${UPDATED:-no}" = no ]; then $SUDO apt-get update -qq; UPDATED=yes; fi
  say "installing $*"
  if [ -n "$suite" ]; then
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t "$suite" "$@" >/dev/null
  else
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  fi
}

UPDATED=no
if [ -r /etc/os-release ] && command -v apt-get >/dev/null 2>&1; then
  . /etc/os-release
  case "${ID:-}:${VERSION_ID:-}" in
    debian:12) setup_trixie_pin; suite=trixie ;;
    # A Debian 12 this script pinned trixie on may report 13 afterwards (the
    # OCaml libraries from trixie bring trixie's base-files along) while apt
    # still prefers bookworm: keep asking for trixie's builds there.
    debian:13|debian:)
      if [ -e /etc/apt/preferences.d/braid-trixie ]; then suite=trixie; else suite=""; fi ;;
    *) die "unsupported system ${PRETTY_NAME:-unknown}: Braid's setup supports Debian 12 and 13 (or opam)" ;;
  esac
  libs=$(missing_debs $DEB_LIBS)
  if [ -n "$libs" ] && ocaml_ok && command -v opam >/dev/null 2>&1; then
    say "OCaml $(ocamlfind ocamlc -version) is present with opam; using opam for libraries"
    opam install -y $OCAML_LIBS
  else
    apt_install "$suite" $libs
  fi
  apt_install "" $(missing_debs $DEB_TOOLS)
elif command -v opam >/dev/null 2>&1; then
  ocaml_ok || die "opam found but no OCaml >= 5.3 in the current switch: opam switch create 5.3.0"
  opam install -y dune $OCAML_LIBS
  say "install curl, wrk, httperf, nginx, h2o, gnuplot, Python's websockets and selenium, Chromium and chromedriver, and the PostgreSQL server (and libpq and SQLite's headers, for opam's postgresql and sqlite3), and liburing's headers (braid_io's io_uring backend) with your system's package manager for the tests and benchmarks"
else
  die "unsupported system: need Debian 12/13 (apt) or opam"
fi

# h2spec, HTTP/2's conformance suite (test/h2 runs it): built from the Go
# module proxy when Go is present (its v2.6.0 is not on the proxy; the latest
# module version builds), installed to /usr/local/bin where the test looks.
GO=$(command -v go || echo /usr/local/go/bin/go)
if ! [ -x /usr/local/bin/h2spec ] && [ -x "$GO" ]; then
  say "building h2spec with $GO"
  $SUDO env GOBIN=/usr/local/bin GOPATH="${GOPATH:-/tmp/braid-go}" "$GO" install github.com/summerwind/h2spec/cmd/h2spec@latest ||
    say "h2spec did not build: test/h2 will fail until it is installed"
fi

ocaml_ok || die "OCaml 5.3 and dune are still missing after installation"
say "ready: OCaml $(ocamlfind ocamlc -version), dune $(dune --version)"
