#!/usr/bin/env bash
# Figure 9, second table: instructions the server executes per request,
# by signer, counted by valgrind's callgrind. Unlike CPU time this count
# does not depend on what else runs on the machine. The server runs under
# `valgrind --tool=callgrind --instr-atstart=no` (thread-pool I/O backend:
# valgrind has no io_uring); instrumentation is switched on only around
# each measured run and the counts dumped after it, so preparing the key
# spaces and starting up count for nothing.
# Output: $OUT/oss-instructions.tsv and one callgrind dump per run
# ($OUT/callgrind.out.<pid>.<n>, readable with callgrind_annotate).
source "$(dirname "$0")/lib.sh"

SMALL_COUNT=${SMALL_COUNT:-2000}
BIG_COUNT=${BIG_COUNT:-2}
TSV=$OUT/oss-instructions.tsv

rm -rf "$DATA_DIR"
mkdir -p "$DATA_DIR"
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT/callgrind.out.%p" \
  "$GODWIT" server --data-dir "$DATA_DIR" --s3-listen "$S3_ADDR" --admin-listen "$ADMIN_ADDR" \
  --io-backend threadpool >"$OUT/server-valgrind.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 300); do
  curl -fsS "http://$ADMIN_ADDR/health" >/dev/null 2>&1 && break
  sleep 1
done
curl -fsS "http://$ADMIN_ADDR/health" >/dev/null

quiet() { "$GODWIT" bench --endpoint "$E" --no-progress "$@" >/dev/null 2>&1; }
quiet --op put --size 4KiB --concurrency 16 --count 1000 --objects 1000 --prefix small/
quiet --op put --size 64MiB --concurrency 2 --count 2 --objects 2 --prefix big/

printf 'size\top\tsigner\tchecksum\trequests\tinstructions_per_request\n' >"$TSV"
n=0
# counted SIZE OP SIGNER CHECKSUM COUNT BENCH-ARGS...
counted() {
  local size=$1 op=$2 signer=$3 checksum=$4 count=$5
  shift 5
  n=$((n + 1))
  callgrind_control -i on "$SERVER_PID" >/dev/null 2>&1
  "$GODWIT" bench --endpoint "$E" --no-progress --json --op "$op" --size "$size" --signer "$signer" \
    --checksum "$checksum" --count "$count" "$@" >"$OUT/instr-$n.json"
  callgrind_control -i off "$SERVER_PID" >/dev/null 2>&1
  callgrind_control -d "$size-$op-$signer-$checksum" "$SERVER_PID" >/dev/null 2>&1 &
  # Callgrind acts on a command when the server runs code: poke it.
  local file="$OUT/callgrind.out.$SERVER_PID.$n" ir
  for _ in $(seq 120); do
    [ -s "$file" ] && break
    curl -fsS "http://$ADMIN_ADDR/health" >/dev/null 2>&1 || true
    sleep 0.5
  done
  wait
  sleep 1
  ir=$(awk '/^(summary|totals):/ { print $2; exit }' "$file")
  local errors
  errors=$(jq '.operations[0].errors' "$OUT/instr-$n.json")
  [ "$errors" = 0 ] || { log "errors in $size $op $signer"; return 1; }
  printf '%s\t%s\t%s\t%s\t%s\t%.0f\n' "$size" "${op^^}" "$signer" "$checksum" "$count" \
    "$(echo "$ir / $count" | bc -l)" | tee -a "$TSV"
}

for sc in aws-v4:none aws-v4:crc32c oss-v1:none oss-v4:none; do
  counted 4KiB put "${sc%%:*}" "${sc##*:}" "$SMALL_COUNT" --concurrency 16 --prefix "put-${sc/:/-}/"
done
for signer in aws-v4 oss-v1 oss-v4; do
  counted 4KiB get "$signer" none "$SMALL_COUNT" --concurrency 16 --objects 1000 --no-prepare --prefix small/
done
for sc in aws-v4:none aws-v4:crc32c oss-v1:none oss-v4:none; do
  counted 64MiB put "${sc%%:*}" "${sc##*:}" "$BIG_COUNT" --concurrency 2 --objects 2 --prefix big/
done
for signer in aws-v4 oss-v1 oss-v4; do
  counted 64MiB get "$signer" none "$BIG_COUNT" --concurrency 2 --objects 2 --no-prepare --prefix big/
done
column -t -s $'\t' "$TSV"
