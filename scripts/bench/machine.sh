#!/usr/bin/env bash
# The machine and the commit measured: the table of docs/benchmarks-history.md
# §1, and docs/BENCHMARKS.md, How to measure, The machine.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "commit:  $(git -C "$REPO" rev-parse --short HEAD)$(git -C "$REPO" diff --quiet HEAD -- . 2>/dev/null || echo ' (+ uncommitted changes)')"
echo "cpu:     $(nproc) x $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
echo "memory:  $(free -g | awk '/^Mem:/ { print $2 " GiB total, " $7 " GiB available" }')"
echo "kernel:  $(uname -r)"
dev=$(df --output=source /var/tmp | tail -1)
echo "disk:    $dev ($(df -h --output=size /var/tmp | tail -1 | tr -d ' '), $(findmnt -no FSTYPE,OPTIONS -T /var/tmp))"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg)"
