#!/usr/bin/env bash
# Runs every test: Rust unit and integration tests (which start real
# servers), then the aws-cli/boto3 suite in its own venv.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/ensure-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/godwit-target}"
# One cargo invocation for everything: a different package selection
# resolves different build-dependency features and would compile RocksDB's
# C++ again. `cargo test` also builds target/debug/godwit for pytest.
echo "== cargo test"
cargo test --workspace -- --test-threads=2
echo "== pytest (aws-cli, boto3)"
VENV="$(./scripts/pytest-env.sh)"
GODWIT_BIN="$CARGO_TARGET_DIR/debug/godwit" "$VENV/bin/python" -m pytest -q tests/py "$@"
