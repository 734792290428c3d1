#!/usr/bin/env bash
# Runs every test: Rust unit and integration tests (which start real
# servers), then the aws-cli/boto3 suite in its own venv.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/ensure-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/godwit-target}"
echo "== cargo build"
cargo build --bin godwit
echo "== cargo test"
cargo test --workspace -- --test-threads=2
echo "== pytest (aws-cli, boto3)"
VENV="$(./scripts/pytest-env.sh)"
GODWIT_BIN="$CARGO_TARGET_DIR/debug/godwit" "$VENV/bin/python" -m pytest -q tests/py "$@"
