# Braid: the two set-up commands are `make setup` and `make test`.

.PHONY: all setup build test run bench bench-quick fmt clean

all: build

setup:
	./scripts/setup.sh

build:
	dune build

test:
	dune build @install
	dune test

# Until the HTTP server lands, a tour of fibers and structures.
run:
	dune exec -- examples/tour/tour.exe

bench:
	dune exec --profile release -- bench/main.exe all

bench-quick:
	dune exec --profile release -- bench/main.exe all --quick

fmt:
	dune fmt

clean:
	dune clean
