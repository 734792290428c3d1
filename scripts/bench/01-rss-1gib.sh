#!/usr/bin/env bash
# Peak RSS of `godwit server` while 16 clients each PUT, then GET, a 1 GiB
# object (16 GiB written and read in all). Goal: < 256 MiB.
# docs/benchmarks-history.md §2.2.
#
# VmHWM (the kernel's peak RSS) is read from /proc/<pid>/status after each
# phase and reset between phases (echo 5 > /proc/<pid>/clear_refs); VmRSS
# is also sampled every 0.2 s during each phase.
source "$(dirname "$0")/lib.sh"

need=$((17 * 1024 * 1024)) # KiB
avail=$(df -k --output=avail "$(dirname "$DATA_DIR")" | tail -1)
if [ "$avail" -lt "$need" ]; then
  log "need ~17 GiB free under $(dirname "$DATA_DIR"), have $((avail / 1024 / 1024)) GiB"
  exit 1
fi

start_server "$@"
status() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$SERVER_PID/status"; }

# sample PHASE: VmRSS (KiB) every 0.2 s into $OUT/rss-PHASE.samples
sample() {
  while kill -0 "$SERVER_PID" 2>/dev/null; do
    echo "$(date +%s.%N) $(status VmRSS)"
    sleep 0.2
  done >"$OUT/rss-$1.samples"
}

phase() {
  local name=$1
  shift
  echo 5 >"/proc/$SERVER_PID/clear_refs" # reset VmHWM
  local before
  before=$(status VmRSS)
  sample "$name" &
  local sampler=$!
  gbench "rss-$name" "$@"
  kill "$sampler"
  wait "$sampler" 2>/dev/null || true
  local max
  max=$(awk '$2 > m { m = $2 } END { print m }' "$OUT/rss-$name.samples")
  printf 'rss-%s: VmRSS before=%d MiB, sampled max VmRSS=%d MiB, VmHWM=%d MiB, VmRSS after=%d MiB\n' \
    "$name" $((before / 1024)) $((max / 1024)) $(($(status VmHWM) / 1024)) $(($(status VmRSS) / 1024)) |
    tee "$OUT/rss-$name.txt"
}

log "idle: VmRSS $(($(status VmRSS) / 1024)) MiB"
phase put --op put --size 1GiB --concurrency 16 --count 16
phase get --op get --size 1GiB --concurrency 16 --count 16 --objects 16 --no-prepare --cleanup
