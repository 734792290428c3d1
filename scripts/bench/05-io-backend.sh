#!/usr/bin/env bash
# io_uring against the blocking thread pool on the same workloads (4 KiB
# PUT, 1 MiB PUT, 1 MiB GET); docs/benchmarks-history.md §2.7. The backend
# in use is read from the admin /metrics (godwit_datanode_io_backend) for
# each server.
source "$(dirname "$0")/lib.sh"

for backend in auto threadpool; do
  start_server --io-backend "$backend"
  echo "backend=$backend metrics: $(io_backend)" | tee "$OUT/backend-$backend.txt"
  gbench "be-$backend-4k-put" --op put --size 4KiB --concurrency 16 --duration "$DUR" --cleanup
  gbench "be-$backend-1m-put" --op put --size 1MiB --concurrency 16 --duration "$DUR" --cleanup
  gbench "be-$backend-1m-get" --op get --size 1MiB --concurrency 16 --duration "$DUR" --objects 1000 --cleanup
  stop_server
done
