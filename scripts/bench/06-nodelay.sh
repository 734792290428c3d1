#!/usr/bin/env bash
# TCP_NODELAY (docs/benchmarks-history.md §2.8). 4 KiB GET over one
# keep-alive connection (concurrency 1): without TCP_NODELAY, Nagle +
# delayed ACK put ~40 ms on some requests. Also checks that the server sets
# TCP_NODELAY on the sockets it accepts, by tracing its setsockopt calls
# while a client connects.
source "$(dirname "$0")/lib.sh"

start_server "$@"
# Prepare the objects first (that opens the client's connection).
gbench nodelay-get --op get --size 4KiB --concurrency 1 --duration "$DUR" --objects 100

# strace the server while a fresh client opens a connection and does HEADs.
strace -f -qq -e trace=accept4,setsockopt -p "$SERVER_PID" -o "$OUT/nodelay.strace" &
tracer=$!
sleep 1
"$GODWIT" bench --endpoint "$E" --op head --size 4KiB --concurrency 2 --count 20 \
  --objects 100 --no-prepare --no-progress --cleanup >/dev/null
sleep 0.5
kill -INT "$tracer"
wait "$tracer" 2>/dev/null || true
{
  echo "connections accepted while traced: $(grep -cE 'accept4\(.*= [0-9]+$' "$OUT/nodelay.strace" || true)"
  echo "server setsockopt(TCP_NODELAY, 1) calls: $(grep -c 'TCP_NODELAY, \[1\]' "$OUT/nodelay.strace" || true)"
  grep -E 'accept4\(.*= [0-9]+$|TCP_NODELAY' "$OUT/nodelay.strace" | head -6
} | tee "$OUT/nodelay.txt"
