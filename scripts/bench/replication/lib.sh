#!/usr/bin/env bash
# Shared settings for scripts/bench/replication/*.sh. Sourced, not run.
#
# Two regions on loopback, each a `godwit server`: A (us-east-1, the source)
# and B (eu-west-1, the destination), with B registered on A as remote "b".
# Override any variable below from the environment.
set -euo pipefail

RB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$RB_DIR/../../.." && pwd)
GODWIT=${GODWIT:-/var/tmp/godwit-release-repl}
ROOT=${ROOT:-/var/tmp/godwit-repl-bench}
OUT=${OUT:-/var/tmp/godwit-repl-bench-results}
A_S3=${A_S3:-127.0.0.1:19100}
A_ADMIN=${A_ADMIN:-127.0.0.1:19101}
B_S3=${B_S3:-127.0.0.1:19200}
B_ADMIN=${B_ADMIN:-127.0.0.1:19201}
export GODWIT_ACCESS_KEY_ID=${GODWIT_ACCESS_KEY_ID:-REPLBENCHKEY00000001}
export GODWIT_SECRET_ACCESS_KEY=${GODWIT_SECRET_ACCESS_KEY:-replbenchsecret0123456789}
export GODWIT_LOG=${GODWIT_LOG:-warn}
PY=${PY:-$("$REPO/scripts/pytest-env.sh")/bin/python}
mkdir -p "$OUT"

A_PID=
B_PID=

log() { printf '%s\n' "$*" >&2; }

# Load average, compilers, and other benchmark processes running right now.
load_note() {
  local busy other
  busy=$(ps -eo comm= | grep -cE '^(rustc|cargo|cc1plus|cc1|ld|build-script-b)' || true)
  other=$(ps -eo args= | grep -c '[g]odwit-bench-bin' || true)
  printf '%s load: %s | compiler processes: %s | godwit-bench-bin processes: %s\n' \
    "$(date -u +%H:%M:%S)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$busy" "$other"
}

wait_healthy() { # ADMIN_ADDR PID LOG
  for _ in $(seq 300); do
    curl -fsS "http://$1/health" >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.2
  done
  log "server on $1 did not become healthy; log:"; cat "$3" >&2; return 1
}

# start_a [env assignments...]: (re)start region A on $ROOT/a, keeping its
# data if it exists (so a restart with other settings keeps the objects).
start_a() {
  mkdir -p "$ROOT/a"
  env "$@" "$GODWIT" server --data-dir "$ROOT/a" --s3-listen "$A_S3" \
    --admin-listen "$A_ADMIN" --region us-east-1 >>"$OUT/a.log" 2>&1 &
  A_PID=$!
  wait_healthy "$A_ADMIN" "$A_PID" "$OUT/a.log"
  log "region A pid $A_PID ($*)"
}
start_b() {
  mkdir -p "$ROOT/b"
  "$GODWIT" server --data-dir "$ROOT/b" --s3-listen "$B_S3" \
    --admin-listen "$B_ADMIN" --region eu-west-1 >>"$OUT/b.log" 2>&1 &
  B_PID=$!
  wait_healthy "$B_ADMIN" "$B_PID" "$OUT/b.log"
  log "region B pid $B_PID"
}
stop_a() { [ -n "$A_PID" ] && kill "$A_PID" 2>/dev/null && wait "$A_PID" 2>/dev/null; A_PID=; }
stop_b() { [ -n "$B_PID" ] && kill "$B_PID" 2>/dev/null && wait "$B_PID" 2>/dev/null; B_PID=; }
stop_all() { stop_a || true; stop_b || true; rm -rf "$ROOT"; }

adm() { "$GODWIT" admin --admin-endpoint "http://$A_ADMIN" --access-key "$GODWIT_ACCESS_KEY_ID" --secret-key "$GODWIT_SECRET_ACCESS_KEY" "$@"; }

# fresh_regions [env for A...]: empty data dirs, both regions up, B known on A
# (with a bandwidth limit of REMOTE_LIMIT bytes/s when set).
fresh_regions() {
  rm -rf "$ROOT"; : >"$OUT/a.log"; : >"$OUT/b.log"
  start_b
  start_a "$@"
  adm remote add b --endpoint "http://$B_S3" --region eu-west-1 \
    --access-key "$GODWIT_ACCESS_KEY_ID" --secret-key "$GODWIT_SECRET_ACCESS_KEY" \
    ${REMOTE_LIMIT:+--bandwidth-limit "$REMOTE_LIMIT"} >/dev/null
  trap stop_all EXIT
}

# replpy SCRIPT ARGS...: one of the Python helpers, pointed at both regions.
replpy() {
  local s=$1; shift
  "$PY" "$RB_DIR/$s" --src "http://$A_S3" --dst "http://$B_S3" \
    --admin-endpoint "http://$A_ADMIN" --godwit "$GODWIT" "$@"
}

# bench_fill BUCKET COUNT SIZE: COUNT new objects in BUCKET on A (godwit bench).
bench_fill() {
  "$GODWIT" bench --endpoint "http://$A_S3" --bucket "$1" --op put --count "$2" \
    --size "$3" --concurrency "${FILL_CONCURRENCY:-32}" --no-progress --json
}
