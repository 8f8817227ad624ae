#!/bin/sh
# Fails if odoc warns about Braid's documentation (a dead link, an ambiguous
# or unresolvable reference). Dune does not replay the warnings of a doc
# build it has cached, so the documentation is built afresh.
set -eu
cd "$(dirname "$0")/.."
rm -rf _build/default/_doc
log=$(dune build @doc 2>&1) || { printf '%s\n' "$log"; exit 1; }
if printf '%s\n' "$log" | grep -q 'Warning'; then
  printf '%s\n' "$log"
  echo "check-docs: odoc warned about the documentation (see above)" >&2
  exit 1
fi
echo "check-docs: no warnings"
