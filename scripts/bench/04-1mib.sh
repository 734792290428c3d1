#!/usr/bin/env bash
# Figure 4: 1 MiB PUT and GET with 16 connections.
source "$(dirname "$0")/lib.sh"

start_server "$@"
gbench mib-put --op put --size 1MiB --concurrency 16 --duration "$DUR" --cleanup
gbench mib-get --op get --size 1MiB --concurrency 16 --duration "$DUR" --objects 1000 --cleanup
