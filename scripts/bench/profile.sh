#!/usr/bin/env bash
# Where the CPU goes: for one workload, the CPU time used by the server
# and by the `godwit bench` client (from /proc/<pid>/stat), per-thread CPU
# of the server (/proc/<pid>/task), and a perf profile of the server.
# Usage: scripts/bench/profile.sh NAME BENCH-ARGS...
#   e.g. scripts/bench/profile.sh get4k --op get --size 4KiB --concurrency 16 --objects 1000
# The objects are prepared first (for reads); the measured run lasts $DUR.
source "$(dirname "$0")/lib.sh"
name=$1
shift
PERF_SECS=${PERF_SECS:-10}

start_server
# cpu_ticks PID: utime + stime of a process (all threads), in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

if [[ " $* " == *" --op get "* || " $* " == *" --op head "* ]]; then
  "$GODWIT" bench --endpoint "$E" "$@" --count 1 --no-progress >/dev/null 2>&1
  set -- "$@" --no-prepare
fi
"$GODWIT" bench --endpoint "$E" "$@" --duration "$DUR" --json --no-progress >"$OUT/prof-$name.json" 2>/dev/null &
client=$!
sleep 2
s0=$(cpu_ticks "$SERVER_PID")
c0=$(cpu_ticks "$client")
b0=$(cpu_busy)
t0=$(date +%s.%N)
threads() { # tid comm ticks switches, for every server thread
  for t in /proc/"$SERVER_PID"/task/*; do
    awk -v t="${t##*/}" '{ sub(/^[0-9]+ \(/, ""); sub(/\) /, " "); split($0, f, " ")
      printf "%s %s %s ", t, f[1], f[12] + f[13] }' "$t/stat" 2>/dev/null &&
      awk '/ctxt_switches/ { n += $2 } END { print n + 0 }' "$t/status" 2>/dev/null
  done
}
threads >"$OUT/prof-$name.threads0"
perf record -F 999 -g -p "$SERVER_PID" -o "$OUT/prof-$name.perf" -- sleep "$PERF_SECS" 2>/dev/null
threads >"$OUT/prof-$name.threads1"
s1=$(cpu_ticks "$SERVER_PID")
c1=$(cpu_ticks "$client")
b1=$(cpu_busy)
t1=$(date +%s.%N)
wait "$client"
summary "$OUT/prof-$name.json" "$name"
awk -v s=$((s1 - s0)) -v c=$((c1 - c0)) -v b=$((b1 - b0)) -v hz="$hz" -v t0="$t0" -v t1="$t1" 'BEGIN {
  w = t1 - t0
  printf "cpu over %.1fs: server %.2f cores, client %.2f cores, other %.2f cores (of 2; perf adds a little to server)\n", w, s / hz / w, c / hz / w, (b - s - c) / hz / w }' |
  tee "$OUT/prof-$name.cpu"
echo "server CPU by thread name (cores, summed over threads of that name):"
awk -v hz="$hz" -v t0="$t0" -v t1="$t1" 'NR == FNR { a[$1] = $3; b[$1] = $4; next }
  { n = $2; sub(/-[0-9]+$/, "", n); sub(/[0-9]+$/, "", n); d[n] += $3 - a[$1]; k[n]++ }
  { x[n] += $4 - b[$1] }
  END { for (n in d) printf "  %-24s %5.2f  (%d threads, %.0f context switches/s)\n", n, d[n] / hz / (t1 - t0), k[n], x[n] / (t1 - t0) }' \
  "$OUT/prof-$name.threads0" "$OUT/prof-$name.threads1" | sort -k2 -nr | head -8 | tee "$OUT/prof-$name.bythread"
echo "hottest symbols (self time):"
perf report -i "$OUT/prof-$name.perf" --no-children --sort dso,symbol --percent-limit 1.5 \
  --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -30 | tee "$OUT/prof-$name.hot"
"$GODWIT" bench --endpoint "$E" --op delete --objects 1 --no-progress --cleanup >/dev/null 2>&1 || true
