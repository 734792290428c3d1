#!/usr/bin/env bash
# Single-stream PUT and GET of a 1 GiB object, beside the same disk's fio
# figures and nginx serving a 1 GiB file on the same loopback, all in the
# same run (docs/benchmarks-history.md §2.3).
source "$(dirname "$0")/lib.sh"

FIO_DIR=$SCRATCH/fio
mkdir -p "$FIO_DIR" "$SCRATCH/www"

# fio NAME ARGS...: prints MB/s (10^6) and MiB/s of one fio job.
fio_job() {
  local name=$1
  shift
  fio --name="$name" --directory="$FIO_DIR" --filename=fio-1g --size=1g --bs=1m \
    --ioengine=psync --output-format=json "$@" >"$OUT/fio-$name.json"
  jq -r --arg n "$name" '.jobs[0] | (.write.bw_bytes + .read.bw_bytes) as $b |
    "fio \($n): \($b / 1e6 * 10 | round / 10) MB/s (\($b / 1048576 * 10 | round / 10) MiB/s)"' \
    "$OUT/fio-$name.json" | tee -a "$OUT/fio.txt"
}

: >"$OUT/fio.txt"
load_note | tee -a "$OUT/fio.txt"
rm -f "$FIO_DIR/fio-1g"
# Sequential 1 MiB writes, one fdatasync at the end (what a PUT must do).
fio_job write-buffered --rw=write --end_fsync=1 --direct=0
fio_job write-direct --rw=write --end_fsync=1 --direct=1
# Reads: O_DIRECT (the disk itself), then buffered from a warm page cache
# (the file was just written; what a GET right after a PUT sees).
fio_job read-direct --rw=read --direct=1
cat "$FIO_DIR/fio-1g" >/dev/null
fio_job read-buffered-warm --rw=read --direct=0
# nginx serves the same 1 GiB file.
mv "$FIO_DIR/fio-1g" "$SCRATCH/www/1g.bin"

: >"$OUT/curl.txt"
start_nginx
for i in 1 2 3; do
  curl -sS -o /dev/null -w '%{http_code} %{size_download} %{speed_download}\n' \
    "http://$NGINX_ADDR/1g.bin" |
    awk '{ printf "curl nginx GET: HTTP %s, %d bytes, %.1f MB/s\n", $1, $2, $3 / 1e6 }' |
    tee -a "$OUT/curl.txt"
done
stop_nginx
rm -f "$SCRATCH/www/1g.bin"

start_server "$@"
gbench single-put --op put --size 1GiB --concurrency 1 --objects 1 --count 3
gbench single-get --op get --size 1GiB --concurrency 1 --objects 1 --count 3 --no-prepare

# The same Godwit object fetched by curl (SigV4 signed by curl itself).
for i in 1 2 3; do
  curl -sS -o /dev/null -w '%{http_code} %{size_download} %{speed_download}\n' \
    --aws-sigv4 "aws:amz:us-east-1:s3" \
    --user "$GODWIT_ACCESS_KEY_ID:$GODWIT_SECRET_ACCESS_KEY" \
    -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
    "$E/godwit-bench/bench/obj-00000000" |
    awk '{ printf "curl godwit GET: HTTP %s, %d bytes, %.1f MB/s\n", $1, $2, $3 / 1e6 }' |
    tee -a "$OUT/curl.txt"
done
"$GODWIT" bench --endpoint "$E" --op delete --objects 1 --no-progress --cleanup >/dev/null 2>&1 || true

load_note | tee -a "$OUT/curl.txt"
