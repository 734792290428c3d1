#!/usr/bin/env bash
# 1 MiB PUT and GET with 16 connections (docs/benchmarks-history.md §2.5).
source "$(dirname "$0")/lib.sh"

start_server "$@"
gbench mib-put --op put --size 1MiB --concurrency 16 --duration "$DUR" --cleanup
gbench mib-get --op get --size 1MiB --concurrency 16 --duration "$DUR" --objects 1000 --cleanup
