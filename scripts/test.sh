#!/usr/bin/env bash
# Runs every test: no unused dependency (cargo-machete), the build, Rust
# unit and integration tests (which start real servers), then the
# aws-cli/boto3 suite in its own venv. Prints how long each phase took.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/ensure-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/godwit-target}"
source ./scripts/phase.sh
# One cargo invocation for everything: a different package selection
# resolves different build-dependency features and would compile RocksDB's
# C++ again. Tests run in the release profile so that the binary they
# build (target/release/godwit, used by pytest) is also the one the
# container image holds: RocksDB is compiled once per CI run.
phase "unused dependencies"
./scripts/unused-deps.sh
phase "the repo stands alone"
# Code and docs cite docs/architecture.md and the public references, never
# design notes kept outside the repo.
if git grep -nE 'DESIGN[.]md|PROTOCOLS[.]md' -- . ':!scripts/test.sh'; then
    echo "the lines above cite a file outside the repo" >&2
    exit 1
fi
phase "build (cargo test --no-run)"
cargo test --release --workspace --no-run
phase "the run build is the test build"
# scripts/run.sh builds `--bin godwit` alone; it must find every artifact
# here (Cargo.toml, "Feature unification"), or a new user compiles twice.
log="$(mktemp)"
cargo build --release --bin godwit 2>&1 | tee "$log" >&2
if grep -q '^ *Compiling ' "$log"; then
    echo "cargo build --release --bin godwit compiled what the test build did not (above): a dev-dependency turns on a feature the binary's dependencies lack; ask for it in Cargo.toml's feature unification" >&2
    rm -f "$log"
    exit 1
fi
rm -f "$log"
phase "cargo test"
cargo test --release --workspace -- --test-threads=2
phase "pytest (aws-cli, boto3)"
VENV="$(./scripts/pytest-env.sh)"
# Three workers (pytest-xdist), each test file on one worker with its own
# session server: the suite mostly waits on clients and servers (load
# about 0.7 on 2 cores run alone), so this takes 2.2x less time
# (368 s -> 164 s). GODWIT_PYTEST_WORKERS=0 runs it in one process.
GODWIT_BIN="$CARGO_TARGET_DIR/release/godwit" "$VENV/bin/python" -m pytest -q tests/py \
    -n "${GODWIT_PYTEST_WORKERS:-3}" --dist loadfile "$@"
phase_end
