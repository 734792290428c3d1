#!/usr/bin/env bash
# The Alibaba OSS dialect against AWS (docs/benchmarks-history.md §6). The
# same PUT and GET loads signed as an AWS SDK does (SigV4, with or without
# an x-amz-checksum-crc32c header the server must check) and as an OSS SDK
# does (V1 `OSS ak:sig` HMAC-SHA1, V4 OSS4-HMAC-SHA256 UNSIGNED-PAYLOAD; the
# server answers in its OSS dialect with x-oss-hash-crc64ecma, which the
# bench checks), for 4 KiB objects (16 clients) and 64 MiB objects
# (4 clients). Per run: ops/s, MB/s, p50/p99 and the server's CPU time per
# request (utime + stime of the server process from /proc/<pid>/stat before
# and after the run, divided by the requests). Every load runs ROUNDS times,
# the signers in a rotated order each round, so that a drift of the machine
# or of the store's size does not favour one signer.
# Before the loads: `godwit bench checksums` (one core, in memory).
source "$(dirname "$0")/lib.sh"

SMALL_DUR=${SMALL_DUR:-15s}
BIG_COUNT=${BIG_COUNT:-24}
BIG_CONC=${BIG_CONC:-4}
ROUNDS=${ROUNDS:-2}
# The object sizes to load (either or both).
SIZES=${SIZES:-"4KiB 64MiB"}
HZ=$(getconf CLK_TCK)
TSV=$OUT/oss-dialect.tsv

for size in $SIZES; do
  log "+ godwit bench checksums --size $size"
  "$GODWIT" bench checksums --size "$size" --duration 2s --json >"$OUT/checksums-$size.json"
  jq -r --arg s "$size" '.rates[] | "checksums \($s): \(.algorithm) (\(.crate_name)) \(.gb_per_sec * 100 | round / 100) GB/s"' \
    "$OUT/checksums-$size.json"
done

start_server "$@"
printf 'round\tsize\top\tsigner\tchecksum\tops\tops_per_s\tMB_per_s\tp50_us\tp99_us\tserver_cpu_us_per_req\tother_cores\n' >"$TSV"

# measure ROUND SIZE SIGNER CHECKSUM BENCH-ARGS...: one gbench run and its
# row in $TSV.
measure() {
  local round=$1 size=$2 signer=$3 checksum=$4
  shift 4
  local name="oss-r$round-$size-$1$2-$signer-$checksum"
  name=${name//--/}
  local s0 s1
  s0=$(server_ticks)
  gbench "$name" --size "$size" --signer "$signer" --checksum "$checksum" "$@"
  s1=$(server_ticks)
  local other
  other=$(sed -n 's/.*other \([0-9.]*\).*/\1/p' "$OUT/$name.load")
  jq -r --arg r "$round" --arg s "$size" --arg g "$signer" --arg c "$checksum" \
    --argjson t $((s1 - s0)) --argjson hz "$HZ" --arg o "$other" '.operations[0] |
    [$r, $s, .operation, $g, $c, .ops, (.ops_per_sec | floor),
     (.mib_per_sec * 1.048576 | floor), .latency_us.p50, .latency_us.p99,
     ($t / $hz / .ops * 1e6 | floor), $o] | @tsv' "$OUT/$name.json" >>"$TSV"
  if [ "$(jq '.operations[0].errors' "$OUT/$name.json")" != 0 ]; then
    log "errors in $name"
    return 1
  fi
}

# rotate N WORDS...: WORDS rotated left by N.
rotate() {
  local n=$1
  shift
  local a=("$@")
  local k=$((n % ${#a[@]}))
  echo "${a[@]:k}" "${a[@]:0:k}"
}

wants() { [[ " $SIZES " == *" $1 "* ]]; }

# The GET key spaces, written once (AWS-signed; every write stores the
# CRC-64 whichever dialect wrote it).
if wants 4KiB; then
  "$GODWIT" bench --endpoint "$E" --no-progress --op put --size 4KiB --concurrency 16 \
    --count 1000 --objects 1000 --prefix small/ >/dev/null
fi
if wants 64MiB; then
  "$GODWIT" bench --endpoint "$E" --no-progress --op put --size 64MiB --concurrency "$BIG_CONC" \
    --count 8 --objects 8 --prefix big/ >/dev/null
fi

PUT_SIGNERS=(aws-v4:none aws-v4:crc32c oss-v1:none oss-v4:none)
GET_SIGNERS=(aws-v4 oss-v1 oss-v4)
for round in $(seq "$ROUNDS"); do
  if wants 4KiB; then
    for sc in $(rotate "$round" "${PUT_SIGNERS[@]}"); do
      measure "$round" 4KiB "${sc%%:*}" "${sc##*:}" --op put --concurrency 16 --duration "$SMALL_DUR" \
        --prefix "put-$round-${sc/:/-}/"
    done
    for signer in $(rotate "$round" "${GET_SIGNERS[@]}"); do
      measure "$round" 4KiB "$signer" none --op get --concurrency 16 --duration "$SMALL_DUR" \
        --objects 1000 --no-prepare --prefix small/
    done
  fi
  if wants 64MiB; then
    for sc in $(rotate "$round" "${PUT_SIGNERS[@]}"); do
      measure "$round" 64MiB "${sc%%:*}" "${sc##*:}" --op put --concurrency "$BIG_CONC" \
        --count "$BIG_COUNT" --objects 8 --prefix big/
    done
    for signer in $(rotate "$round" "${GET_SIGNERS[@]}"); do
      measure "$round" 64MiB "$signer" none --op get --concurrency "$BIG_CONC" --count "$BIG_COUNT" \
        --objects 8 --no-prepare --prefix big/
    done
  fi
done

log "rows: $TSV"
column -t -s $'\t' "$TSV"
# Mean over the rounds of each (size, op, signer, checksum).
awk -F'\t' 'NR > 1 { k = $2 "\t" $3 "\t" $4 "\t" $5; n[k]++; ops[k] += $7; mb[k] += $8
    p50[k] += $9; p99[k] += $10; cpu[k] += $11; if (!(k in first)) { first[k] = NR; order[NR] = k } }
  END { print "size\top\tsigner\tchecksum\trounds\tops/s\tMB/s\tp50_us\tp99_us\tserver_cpu_us/req"
    for (i = 2; i <= NR; i++) if (i in order) { k = order[i]
      printf "%s\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\n", k, n[k], ops[k] / n[k], mb[k] / n[k],
        p50[k] / n[k], p99[k] / n[k], cpu[k] / n[k] } }' "$TSV" |
  tee "$OUT/oss-dialect-mean.tsv" | column -t -s $'\t'
