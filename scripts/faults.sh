#!/usr/bin/env bash
# Runs the fault-injection suite (tests/faults, docs/faults.md) and prints
# its results table (also written to $GODWIT_FAULTS_TABLE, default
# target/faults-results.md).
#
#   scripts/faults.sh                       # every scenario, 6 s faults
#   GODWIT_FAULTS_SECS=30 scripts/faults.sh # longer faults
#   scripts/faults.sh partition             # scenarios whose name matches
#
# GODWIT_FAULTS_SECS   how long each fault lasts (default 6)
# GODWIT_FAULTS_REQUIRE=1 fail a scenario instead of printing SKIPPED when
#                      the machine lacks root, namespaces or libfaketime
# GODWIT_FAULTS_LOGS=1 print the tail of every process's log after each
#                      scenario (always printed when one fails)
# Scenarios run one at a time whatever --test-threads says. Ignored
# scenarios (known bugs, see docs/faults.md) run too: --include-ignored.
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/ensure-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/godwit-target}"
table="${GODWIT_FAULTS_TABLE:-$CARGO_TARGET_DIR/faults-results.md}"
rows="$(mktemp)"
trap 'rm -f "$rows"' EXIT
export GODWIT_FAULTS_RESULTS="$rows"
started=$(date +%s)
cargo test --release --workspace --test faults -- --include-ignored --test-threads=1 "$@"
rc=$?
{
    echo "Fault suite, GODWIT_FAULTS_SECS=${GODWIT_FAULTS_SECS:-6}, $(nproc) cores, $(date -u +%Y-%m-%d), $(( $(date +%s) - started )) s in all"
    echo
    echo "| scenario | ops | acked writes | lost | stale reads | linearizable | unavailable | result |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
    cat "$rows"
} > "$table"
echo
cat "$table"
echo
echo "table written to $table (cargo test exit $rc)"
exit $rc
