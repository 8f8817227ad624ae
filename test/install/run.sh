#!/bin/sh
# Braid as another project sees it: installed, not built in this tree.
#
# 1. Every package is built alone, as opam builds it (`dune build -p PKG`
#    in a copy of the sources), against the packages it declares (its
#    *.opam depends, transitively) and nothing else of Braid: each package
#    is installed into a prefix of its own, and OCAMLPATH names only the
#    prefixes of the declared ones. A library linked but not declared is
#    not found.
# 2. Each installed library's META `requires` is checked against its
#    package's depends: a third-party package linked but not declared (the
#    switch has it, so step 1 cannot see it) fails here. Then each
#    package's tests are built, not run, as `opam install --with-test`
#    builds them (`dune build -p PKG @runtest`), against the packages it
#    declares, :with-test ones included: a test stanza without the
#    (package ...) it belongs to, or linking a package its package does not
#    declare, fails here.
# 3. The whole tree is installed as the README says (`dune install
#    --prefix`, from this tree's build).
# 4. Two projects outside the repository are built against those installs:
#    the hello-world of docs/web-apps.md (its dune stanza and code, taken
#    from the page) and examples/webapp (its sources and dune file, copied;
#    its tests are run too). Each sees only the packages its dune file
#    names, with their declared dependencies. A library missing from a
#    package, a private module, a name the guide gets wrong fails here.
#
# About a minute on two cores. Temporary files are removed on exit.
set -eu

repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/braid-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

start=$(date +%s)
say() { printf 'install-test: [%3ss] %s\n' "$(($(date +%s) - start))" "$*"; }
# Runs a command; prints its output only if it fails.
quietly() {
  "$@" >"$tmp/log" 2>&1 || {
    cat "$tmp/log" >&2
    return 1
  }
}
fail() {
  printf 'install-test: FAILED: %s\n' "$*" >&2
  exit 1
}

# Nothing of Braid may be visible before it is installed here: an install
# in the switch would hide whatever these packages fail to provide.
unset OCAMLPATH OCAMLFIND_CONF DUNE_ROOT DUNE_BUILD_DIR
if command -v ocamlfind >/dev/null 2>&1 &&
  ocamlfind query braid >/dev/null 2>&1; then
  fail "braid is already installed in the switch ($(ocamlfind query braid)):" \
    "this test could not tell what the packages here provide"
fi

# The sources as a checkout has them: tracked and new files, not _build.
src=$tmp/src
mkdir -p "$src" "$tmp/pkg"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard) |
  (cd "$repo" && tar --null -T - --ignore-failed-read -cf - 2>/dev/null) |
  (cd "$src" && tar xf -)

packages=$(cd "$src" && ls ./*.opam | sed 's|^\./||; s|\.opam$||')

# The packages PKG.opam depends on, tests and documentation aside.
depends() {
  sed -n '/^depends: \[/,/^\]/p' "$src/$1.opam" |
    grep -v 'with-test\|with-doc' | sed -n 's/^ *"\([^"]*\)".*/\1/p'
}

# Those and the ones its tests and documentation examples need.
test_depends() {
  sed -n '/^depends: \[/,/^\]/p' "$src/$1.opam" |
    grep -v 'with-doc' | sed -n 's/^ *"\([^"]*\)".*/\1/p'
}

# The Braid packages among those, and theirs, transitively.
braid_closure() {
  seen=" "
  todo=$*
  while [ -n "$todo" ]; do
    set -- $todo
    p=$1
    shift
    todo=$*
    case "$seen" in *" $p "*) continue ;; esac
    seen="$seen$p "
    for d in $(depends "$p"); do
      [ -f "$src/$d.opam" ] && todo="$todo $d"
    done
  done
  echo $seen
}

# OCAMLPATH holding the installs of the given packages only.
path_of() {
  path=
  for p in $(braid_closure "$@"); do
    path=${path:+$path:}$tmp/pkg/$p/lib
  done
  echo "$path"
}

# Packages that come with the compiler (findlib names).
with_ocaml=" unix threads str dynlink compiler-libs runtime_events stdlib "

# 1 and 2: each package alone, after those it declares.
installed=" "
install_package() {
  case "$installed" in *" $1 "*) return ;; esac
  for d in $(depends "$1"); do
    [ -f "$src/$d.opam" ] && install_package "$d"
  done
  say "dune build -p $1 (with $(braid_closure "$1" | sed "s/^$1 *//;s/^$/nothing else of Braid/"))"
  # -p is --root . among others, as opam runs it.
  (cd "$src" && OCAMLPATH=$(path_of $(depends "$1" | while read -r d; do
    [ -f "$src/$d.opam" ] && echo "$d"
  done)) dune build -p "$1" --build-dir "_build-$1") ||
    fail "package $1 does not build with what it declares"
  quietly dune install --root "$src" --build-dir "_build-$1" \
    --prefix "$tmp/pkg/$1" "$1" || fail "dune install $1"
  declared=" $(depends "$1" | tr '\n' ' ') "
  for meta in $(find "$tmp/pkg/$1/lib" -name META); do
    for r in $(sed -n 's/^ *requires[^=]*= *"\([^"]*\)".*/\1/p' "$meta"); do
      root=${r%%.*}
      case "$with_ocaml$1 " in *" $root "*) continue ;; esac
      case "$declared" in
        *" $root "*) ;;
        *) fail "$1 links $r (${meta#"$tmp/pkg/"}) but does not depend on $root" ;;
      esac
    done
  done
  installed="$installed$1 "
}
for p in $packages; do install_package "$p"; done

# What `dune build -p PKG @runtest` builds, short of running the tests: the
# directories whose dune file names PKG (its tests, its mdx stanzas, its
# libraries) type-checked (@check; the tests are not linked), the libraries
# of their mdx stanzas looked up (mdx_gen.ml-gen: linking the mdx programs
# would double the time), and the programs their rules run from elsewhere
# (%{exe:...} and %{dep:...} of an .exe). A few seconds in all.
#
# A test, an mdx stanza or a runtest rule without a (package ...) field
# belongs to every package, and its directory may name none: found first.
unowned=$(cd "$src" && find . -name dune -not -path './_build*' | sort |
  xargs awk '
    function flush() {
      if (!owned && (kind ~ /^(tests?|mdx)$/ || (kind == "rule" && runtest)))
        print file ":" start ": (" kind " without (package ...)"
      kind = ""
    }
    FNR == 1 { flush(); file = substr(FILENAME, 3) }
    /^\(/ {
      flush(); kind = substr($1, 2); sub(/\)$/, "", kind)
      start = FNR; owned = 0; runtest = 0
    }
    /^ \(package [a-z0-9_]*\)$/ { owned = 1 }
    /\(alias runtest\)/ { runtest = 1 }
    END { flush() }')
[ -z "$unowned" ] || fail "a stanza of the tests names no package:
$unowned"
test_targets() {
  (cd "$src" && grep -rl --include=dune --exclude-dir='_build*' \
    "(package $1)" .) | sed 's|^\./||' | sort | while read -r f; do
    d=$(dirname "$f")
    at=${d#.}
    at=${at:+$at/}
    grep -q '^(\(tests\?\|library\|executables\?\)\( \|$\)' "$src/$f" &&
      echo "@@${at}check"
    grep -A1 '^(mdx' "$src/$f" | grep -q "(package $1)" &&
      echo "${at}mdx_gen.ml-gen"
    for x in $(grep -o '%{\(exe\|dep\):[^}]*\.exe}' "$src/$f" |
      sed 's/^%{[a-z]*://; s/}$//'); do
      case "$x" in */*) ;; *) continue ;; esac # in $d: @@$d/check has it
      echo "$(cd "$src/$d/$(dirname "$x")" && pwd |
        sed "s|^$src/||")/$(basename "$x")"
    done
  done
}
for p in $packages; do
  with=$(test_depends "$p" | while read -r d; do
    if [ "$d" != "$p" ] && [ -f "$src/$d.opam" ]; then echo "$d"; fi
  done)
  say "dune build -p $p, its tests (with $(braid_closure $with |
    sed "s/^$/nothing else of Braid/"))"
  (cd "$src" && OCAMLPATH=$(path_of $with) dune build -p "$p" \
    --build-dir "_build-$p" $(test_targets "$p")) ||
    fail "the tests of $p do not build with what it declares"
done

"$tmp/pkg/braid_cli/bin/braid" --help=plain >/dev/null ||
  fail "the installed braid command does not run"

# 3: the README's way, from this tree's build (`make test` has built
# @install already; dune does nothing more if so).
say "dune install --prefix (the whole tree)"
(cd "$repo" && dune build @install) || fail "dune build @install"
(cd "$repo" && quietly dune install --prefix "$tmp/all") ||
  fail "dune install --prefix"

# 4: projects outside the repository.
project() { # NAME DIR: make DIR a dune project of its own
  mkdir -p "$2"
  printf '(lang dune 3.17)\n(name %s)\n' "$1" >"$2/dune-project"
}

# The Braid packages a dune file names (braid.sync is in braid).
named_packages() {
  grep -o 'braid[a-z0-9_.]*' "$1" | sed 's/\..*//' | sort -u |
    while read -r p; do [ -f "$src/$p.opam" ] && echo "$p"; done
}

outside() { # NAME DIR ACTION...: build DIR with the packages it names
  name=$1 dir=$2
  shift 2
  pkgs=$(named_packages "$dir/dune" | tr '\n' ' ')
  say "$name: dune $* (with $(braid_closure $pkgs | tr -s ' '))"
  OCAMLPATH=$(path_of $pkgs) dune "$@" --no-print-directory --root "$dir" ||
    fail "$name, against the packages installed one by one"
  say "$name: dune $* (with everything, installed by dune install --prefix)"
  rm -rf "$dir/_build"
  OCAMLPATH=$tmp/all/lib dune "$@" --no-print-directory --root "$dir" ||
    fail "$name, against dune install --prefix"
}

# (a) The guide's hello-world: its first dune block, and its first two
# OCaml blocks (the opens, then the program), which `main ()` runs.
guide=$repo/docs/web-apps.md
hello=$tmp/hello
project hello "$hello"
block() { # LANGUAGE N: the Nth fenced block of that language in the guide
  awk -v lang="$1" -v n="$2" '
    $0 == "```" lang { k++; inside = (k == n); next }
    /^```/ { inside = 0; next }
    inside' "$guide"
}
block dune 1 >"$hello/dune"
{
  block ocaml 1
  block ocaml 2
  echo 'let () = main ()'
} >"$hello/hello.ml"
grep -q '(name hello)' "$hello/dune" ||
  fail "docs/web-apps.md: no dune stanza for hello (the first dune block)"
grep -q 'Server.serve hello_app' "$hello/hello.ml" ||
  fail "docs/web-apps.md: the hello-world is not its second OCaml block"
outside hello "$hello" build

# (b) examples/webapp, sources, public files and dune file as they are,
# but for the (package braid_server) of its tests: a project of its own has
# no such package.
webapp=$tmp/webapp
project webapp "$webapp"
cp -R "$src/examples/webapp/." "$webapp/"
grep -v '^ *(package [a-z0-9_]*)$' "$src/examples/webapp/dune" >"$webapp/dune"
grep -q '(package' "$webapp/dune" &&
  fail "examples/webapp/dune: a (package ...) field not on a line of its own"
outside webapp "$webapp" build @default @runtest

say "ok"
