#!/usr/bin/env bash
# Shared settings and helpers for scripts/bench/*.sh. Sourced, not run.
#
# Every figure script starts its own `godwit server` on a fresh data dir,
# runs `godwit bench --json`, keeps the JSON under $OUT and prints the
# figures. Override any of the variables below from the environment.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH_DIR/../.." && pwd)
GODWIT=${GODWIT:-/var/tmp/godwit-target/release/godwit}
DATA_DIR=${DATA_DIR:-/var/tmp/bench-data}
S3_ADDR=${S3_ADDR:-127.0.0.1:19000}
ADMIN_ADDR=${ADMIN_ADDR:-127.0.0.1:19001}
# With a TLS server (09-tls.sh): SCHEME=https and CURL_CA=<CA bundle>.
SCHEME=${SCHEME:-http}
E=$SCHEME://$S3_ADDR
OUT=${OUT:-/var/tmp/godwit-bench-results}
DUR=${DUR:-30s}
# Scratch space for fio and nginx (same disk as $DATA_DIR).
SCRATCH=${SCRATCH:-/var/tmp/godwit-bench-scratch}
NGINX_ADDR=${NGINX_ADDR:-127.0.0.1:19080}

export GODWIT_ACCESS_KEY_ID=${GODWIT_ACCESS_KEY_ID:-BENCHROOTKEY00000001}
export GODWIT_SECRET_ACCESS_KEY=${GODWIT_SECRET_ACCESS_KEY:-benchsecret0123456789}
export GODWIT_LOG=${GODWIT_LOG:-warn}

mkdir -p "$OUT"

SERVER_PID=
NGINX_PID=

log() { printf '%s\n' "$*" >&2; }

# Prints the load average and any compiler running, so that a figure taken
# while the machine was busy can be spotted (and retaken).
load_note() {
  local busy
  busy=$(ps -eo comm= | grep -cE '^(rustc|cargo|cc1plus|cc1|ld|build-script-b)' || true)
  printf 'load: %s | compiler processes: %s\n' \
    "$(cut -d' ' -f1-3 /proc/loadavg)" "$busy"
}

# wait_healthy ADMIN_ADDR PID LOG: until the server's /health answers
# (HEALTH_WAIT seconds, 30 by default); on failure prints its log and fails.
wait_healthy() {
  local admin=$1 pid=$2 logfile=$3
  for _ in $(seq $((${HEALTH_WAIT:-30} * 5))); do
    if curl -fsS ${CURL_CA:+--cacert "$CURL_CA"} "$SCHEME://$admin/health" >/dev/null 2>&1; then
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  log "godwit server did not become healthy; log:"
  cat "$logfile" >&2
  return 1
}

# start_server [extra `godwit server` args...]: a fresh server on $DATA_DIR,
# run under the command in the array SERVER_WRAPPER if set (one that execs
# the server in its own process, as valgrind does).
start_server() {
  [ -x "$GODWIT" ] || { log "no binary at $GODWIT (cargo build --release --bin godwit)"; return 1; }
  rm -rf "$DATA_DIR"
  mkdir -p "$DATA_DIR"
  ${SERVER_WRAPPER[@]+"${SERVER_WRAPPER[@]}"} "$GODWIT" server --data-dir "$DATA_DIR" --s3-listen "$S3_ADDR" \
    --admin-listen "$ADMIN_ADDR" "$@" >"$OUT/server.log" 2>&1 &
  SERVER_PID=$!
  wait_healthy "$ADMIN_ADDR" "$SERVER_PID" "$OUT/server.log" || return 1
  log "godwit server pid $SERVER_PID ($*) backend: $(io_backend)"
}

stop_server() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=
  rm -rf "$DATA_DIR"
}

# The admin /metrics line(s) naming the I/O backend in use.
io_backend() {
  curl -s ${CURL_CA:+--cacert "$CURL_CA"} "$SCHEME://$ADMIN_ADDR/metrics" | grep io_backend | grep -v '^#' | tr '\n' ' '
}

# metric NAME: the sum of a counter over its label sets (0 when absent).
metric() {
  curl -s ${CURL_CA:+--cacert "$CURL_CA"} "$SCHEME://$ADMIN_ADDR/metrics" |
    awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $NF } END { printf "%.0f\n", s }'
}

# insns_start / insns_stop NAME: the server's instructions between the two,
# for scripts whose COUNT mode runs the server under callgrind
# (SERVER_WRAPPER with --instr-atstart=no and
# --callgrind-out-file="$OUT/callgrind.server"); insns_stop prints them and
# keeps the profile as $OUT/callgrind.NAME. Without COUNT: nothing, and 0.
insns_start() {
  [ -n "${COUNT:-}" ] || return 0
  callgrind_control --zero "$SERVER_PID" >/dev/null 2>&1
  callgrind_control --instr=on "$SERVER_PID" >/dev/null 2>&1
}
insns_stop() {
  [ -n "${COUNT:-}" ] || { echo 0; return 0; }
  callgrind_control --instr=off "$SERVER_PID" >/dev/null 2>&1
  rm -f "$OUT/callgrind.server".*
  callgrind_control --dump="$1" "$SERVER_PID" >/dev/null 2>&1
  local dump
  dump=$(ls "$OUT/callgrind.server".* | head -1)
  mv "$dump" "$OUT/callgrind.$1"
  awk '$1 == "totals:" { print $2; exit }' "$OUT/callgrind.$1"
}

# CPU accounting, in clock ticks: busy time of the whole machine (user,
# nice, system, irq, softirq, steal; not idle or iowait), of the server
# processes, and of this shell's finished children (the bench client).
cpu_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
server_ticks() {
  local pids="$SERVER_PID" t=0 p
  if [ -n "$NGINX_PID" ]; then pids="$NGINX_PID $(pgrep -P "$NGINX_PID" | tr '\n' ' ')"; fi
  for p in $pids; do
    [ -r "/proc/$p/stat" ] && t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
  done
  echo "$t"
}
# (`times` must run in this shell, not in a $(...) subshell.)
child_ticks() {
  awk -v hz="$(getconf CLK_TCK)" 'NR == 2 {
    gsub(/s/, "", $1); gsub(/s/, "", $2); split($1, u, "m"); split($2, k, "m")
    printf "%.0f\n", (u[1] * 60 + u[2] + k[1] * 60 + k[2]) * hz }' "$OUT/.times"
}

# accounted NAME OUTFILE CMD...: runs CMD with stdout to OUTFILE and
# writes $OUT/NAME.load: the load before and after, and where the CPU went
# during the run (server, client = CMD, anything else on the machine:
# "other" near 0 means the machine was quiet).
accounted() {
  local name=$1 outfile=$2
  shift 2
  echo "$(load_note) (before $name)" >"$OUT/$name.load"
  local b0 s0 c0 t0 b1 s1 c1 t1
  times >"$OUT/.times"
  b0=$(cpu_busy) s0=$(server_ticks) c0=$(child_ticks) t0=$(date +%s.%N)
  "$@" >"$outfile"
  times >"$OUT/.times"
  b1=$(cpu_busy) s1=$(server_ticks) c1=$(child_ticks) t1=$(date +%s.%N)
  awk -v b=$((b1 - b0)) -v s=$((s1 - s0)) -v c=$((c1 - c0)) -v t0="$t0" -v t1="$t1" \
    -v hz="$(getconf CLK_TCK)" -v n="$(nproc)" 'BEGIN { w = (t1 - t0) * hz
      printf "cpu (cores of %d, whole command): server %.2f, client %.2f, other %.2f\n",
        n, s / w, c / w, (b - s - c) / w }' >>"$OUT/$name.load"
  echo "$(load_note) (after $name)" >>"$OUT/$name.load"
}

# gbench NAME ARGS...: runs `godwit bench` with --json, keeps $OUT/NAME.json
# and prints the summary line of each operation and the CPU accounting.
gbench() {
  local name=$1
  shift
  log "+ godwit bench --endpoint $E $*"
  accounted "$name" "$OUT/$name.json" "$GODWIT" bench --endpoint "$E" --json --no-progress "$@"
  summary "$OUT/$name.json" "$name"
  sed 's/^/    /' "$OUT/$name.load"
}

# summary FILE [LABEL]: one line per operation of a bench JSON file.
summary() {
  jq -r --arg l "${2:-}" '.operations[] |
    "\($l): \(.operation) ops=\(.ops) ops/s=\(.ops_per_sec | floor)" +
    " MiB/s=\(.mib_per_sec * 100 | round / 100)" +
    " MB/s=\(.mib_per_sec * 1.048576 * 100 | round / 100)" +
    " p50=\(.latency_us.p50)us p99=\(.latency_us.p99)us p99.9=\(.latency_us.p999)us" +
    " max=\(.latency_us.max)us errors=\(.errors)"' "$1"
}

# start_nginx: nginx on $NGINX_ADDR serving $SCRATCH/www, keep-alive on,
# sendfile on. /godwit-bench answers HEAD with 200 and
# /godwit-bench/PREFIX/obj-N maps to $SCRATCH/www/s3/PREFIX/obj-N, so that the
# same `godwit bench --op get --no-prepare` can load nginx too.
start_nginx() {
  local conf=$SCRATCH/nginx
  mkdir -p "$conf/logs" "$SCRATCH/www/s3"
  cat >"$conf/nginx.conf" <<NGINX
worker_processes 2;
pid $conf/nginx.pid;
error_log $conf/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_timeout 65;
  keepalive_requests 1000000;
  default_type application/octet-stream;
  server {
    listen $NGINX_ADDR;
    root $SCRATCH/www;
    location = /godwit-bench { return 200; }
    location /godwit-bench/ { alias $SCRATCH/www/s3/; }
  }
}
NGINX
  nginx -p "$conf" -c "$conf/nginx.conf" -g 'daemon off;' &
  NGINX_PID=$!
  for _ in $(seq 50); do
    curl -fsS -o /dev/null "http://$NGINX_ADDR/godwit-bench" 2>/dev/null && return 0
    sleep 0.1
  done
  log "nginx did not start"
  cat "$conf/logs/error.log" >&2
  return 1
}

stop_nginx() {
  if [ -n "$NGINX_PID" ] && kill -0 "$NGINX_PID" 2>/dev/null; then
    kill -QUIT "$NGINX_PID"
    wait "$NGINX_PID" 2>/dev/null || true
  fi
  NGINX_PID=
}

cleanup_all() {
  stop_server
  stop_nginx
}
trap cleanup_all EXIT
