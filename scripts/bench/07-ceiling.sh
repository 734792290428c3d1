#!/usr/bin/env bash
# The loopback ceiling (docs/benchmarks-history.md §2.9). nginx (2 workers,
# sendfile, keep-alive) serving 4 KiB and 1 MiB static files, driven by wrk
# with 16 connections, and by the same `godwit bench` client that loads
# Godwit (so the client's own CPU cost on these 2 cores is in both numbers).
source "$(dirname "$0")/lib.sh"
WRK_DUR=${WRK_DUR:-${DUR}}

www=$SCRATCH/www/s3
mkdir -p "$www/bench" "$www/bench1m"
head -c 4096 /dev/urandom >"$SCRATCH/www/4k.bin"
head -c 1048576 /dev/urandom >"$SCRATCH/www/1m.bin"
for i in $(seq 0 999); do
  n=$(printf 'obj-%08d' "$i")
  ln -f "$SCRATCH/www/4k.bin" "$www/bench/$n"
  ln -f "$SCRATCH/www/1m.bin" "$www/bench1m/$n"
done
start_nginx

wrk_run() { # NAME PATH
  log "+ wrk -t2 -c16 -d$WRK_DUR --latency http://$NGINX_ADDR$2"
  accounted "$1" "$OUT/$1.txt" wrk -t2 -c16 -d"$WRK_DUR" --latency "http://$NGINX_ADDR$2"
  awk -v n="$1" '/Requests\/sec/ { r = $2 } /Transfer\/sec/ { t = $2 }
    /^ +50%/ { p50 = $2 } /^ +99%/ { p99 = $2 }
    END { printf "%s: %s req/s, %s/s, p50 %s, p99 %s\n", n, r, t, p50, p99 }' "$OUT/$1.txt"
  sed 's/^/    /' "$OUT/$1.load"
}
wrk_run wrk-4k /4k.bin
wrk_run wrk-1m /1m.bin

E=http://$NGINX_ADDR
gbench nginx-4k-get --op get --size 4KiB --concurrency 16 --duration "$DUR" --objects 1000 --no-prepare
gbench nginx-4k-head --op head --size 4KiB --concurrency 16 --duration "$DUR" --objects 1000 --no-prepare
gbench nginx-1m-get --op get --size 1MiB --concurrency 16 --duration "$DUR" --objects 1000 --no-prepare --prefix bench1m/
stop_nginx
rm -rf "$SCRATCH/www"
