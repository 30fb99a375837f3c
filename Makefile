# rocklake-migrate. `make demo` and `make test` do all setup on a fresh machine.
# Caches live outside the clone so that reruns are fast; a fresh machine
# builds them from scratch.

SHELL := /bin/bash
export ROCKLAKE_CACHE ?= $(HOME)/.cache/rocklake-migrate
export CARGO_TARGET_DIR ?= $(ROCKLAKE_CACHE)/cargo-target
export PATH := $(ROCKLAKE_CACHE)/bin:$(PATH)
export CGO_ENABLED := 1

NATIVE_LIB := native/lib/librocklake_slatedb.a
NATIVE_SRC := $(wildcard native/src/*.rs) native/Cargo.toml native/Cargo.lock
GO_TEST_FLAGS ?= -race -count=1 -timeout 30m

.PHONY: all native tools build test test-go test-native lint check-glibc bench demo clean

all: build

# The Rust crate that links SlateDB, as a static library for cgo.
native: $(NATIVE_LIB)
$(NATIVE_LIB): $(NATIVE_SRC)
	cd native && cargo build --release --locked
	mkdir -p native/lib
	cp $(CARGO_TARGET_DIR)/release/librocklake_slatedb.a $(NATIVE_LIB)

# Everything the tests need that is not a Go module: versitygw (S3), protoc.
tools:
	scripts/install-versitygw.sh
	scripts/install-protoc.sh

build: native
	go build -o bin/ ./cmd/...

lint: native
	@fmt=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$fmt" ]; then echo "gofmt needed: $$fmt"; exit 1; fi
	go vet ./...
	cd native && cargo clippy --release --locked --all-targets -- -D warnings

test-native:
	cd native && cargo test --release --locked

test-go: native tools
	go test $(GO_TEST_FLAGS) ./...

# Lambdas run on provided.al2023 (glibc 2.34): no binary may need newer symbols.
check-glibc: build
	scripts/check-glibc.sh 2.34 bin/*

test: native tools lint test-native test-go check-glibc

bench: build tools
	go test -run '^$$' -bench . -benchmem -timeout 60m ./pkg/format/ ./pkg/ndjson/
	scripts/bench-pipeline.sh

demo: build tools
	scripts/demo.sh

clean:
	rm -rf bin native/lib
