#!/usr/bin/env bash
# docs/benchmarks-history.md §13.4: completion lag after
# CompleteMultipartUpload (source Complete ack -> destination HEAD shows the
# same ETag), 64 MiB parts, RTC and standard rules. SIZES=256MiB,1GiB,4GiB
# by default (needs ~9 GiB free).
. "$(dirname "$0")/lib.sh"
SIZES=${SIZES:-256MiB,1GiB,4GiB} LANES=${LANES:-rtc,standard}
df -h "$(dirname "$ROOT")" | tail -1 >&2
fresh_regions
load_note | tee "$OUT/r3-load.txt"
replpy multipart.py --sizes "$SIZES" --lanes "$LANES" --json-out "$OUT/r3-multipart.json"
load_note | tee -a "$OUT/r3-load.txt"
