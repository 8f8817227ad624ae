# Braid: the two set-up commands are `make setup` and `make test`.

.PHONY: all setup build test install-test cluster-test run bench bench-quick fmt clean

all: build

setup:
	./scripts/setup.sh

build:
	dune build

# Formatting and documentation are checked before the tests: a change that
# breaks either fails here, not later.
test:
	dune build @install
	dune build @fmt
	./scripts/check-docs.sh
	dune test
	./test/install/run.sh
	./examples/cluster/rolling-restart.sh

# Every package built alone against what it declares and installed; the
# guide's hello-world and examples/webapp built outside the repository
# against the installed packages (about 40 s; part of `make test`).
install-test:
	./test/install/run.sh

# Three braid serve behind haproxy, restarted one by one under wrk: no
# failed request (about 10 s; part of `make test`).
cluster-test:
	dune build bin/main.exe
	./examples/cluster/rolling-restart.sh

# The HTTP server with the demo routes, serving examples/public.
run:
	dune exec -- braid serve --demo --root examples/public --port 8080

bench:
	dune exec --profile release -- bench/main.exe all

bench-quick:
	dune exec --profile release -- bench/main.exe all --quick

fmt:
	dune fmt

clean:
	dune clean
