#!/usr/bin/env bash
# Runs Godwit's embedded all-in-one server (release build), data in
# ./godwit-data, S3 on 127.0.0.1:9000, admin on 127.0.0.1:9001.
# Extra arguments go to `godwit server` (see `godwit server --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/ensure-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/godwit-target}"
exec cargo run --release --bin godwit -- server "$@"
