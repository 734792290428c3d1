#!/usr/bin/env bash
# The seed article's RTC verification against the two compose regions
# (deploy/compose.sh up -d first): oss2 uploads and counts, aws-cli copies
# the large file, then the table; it ends by checking that the deployment's
# Prometheus scraped every process and sees the rules caught up (the
# figures it prints). Options go to deploy/demo.py (--help):
#   deploy/demo.sh                                  # 2,000 small files, 1 GiB file
#   deploy/demo.sh --large-size 200MiB --json out.json
#   deploy/demo.sh --api s3                         # boto3 + AWS replication API
set -euo pipefail
DIR="$(cd "$(dirname "$0")" && pwd)"
cd "$DIR/.."
# Credentials from deploy/.env unless the shell has them.
if [[ -z "${GODWIT_ACCESS_KEY_ID:-}" || -z "${GODWIT_SECRET_ACCESS_KEY:-}" ]]; then
    set -a
    # shellcheck source=/dev/null
    . "$DIR/.env"
    set +a
fi
# Where the regions' ports are published (deploy/compose.yaml).
export GODWIT_SOURCE_ENDPOINT="${GODWIT_SOURCE_ENDPOINT:-http://127.0.0.1:${HANGZHOU_S3_PORT:-9000}}"
export GODWIT_DEST_ENDPOINT="${GODWIT_DEST_ENDPOINT:-http://127.0.0.1:${SHANGHAI_S3_PORT:-9100}}"
export GODWIT_SOURCE_METRICS="${GODWIT_SOURCE_METRICS:-http://127.0.0.1:${HANGZHOU_REPLICATOR_PORT:-9002}}"
export GODWIT_PROMETHEUS="${GODWIT_PROMETHEUS-http://127.0.0.1:${PROMETHEUS_PORT:-9090}}"
ADMIN="http://127.0.0.1:${HANGZHOU_ADMIN_PORT:-9001}"
VENV="$(./scripts/pytest-env.sh)"
export PATH="$VENV/bin:$PATH"   # aws-cli from the venv
status=0
"$VENV/bin/python" "$DIR/demo.py" "$@" || status=$?

# Per-rule counters as each region's admin API reports them (the reverse
# rule lives in cn-shanghai).
for admin in "$ADMIN" "http://127.0.0.1:${SHANGHAI_ADMIN_PORT:-9101}"; do
    echo
    echo "godwit admin --admin-endpoint $admin replication status:"
    docker run --rm --network host \
        -e GODWIT_ACCESS_KEY_ID -e GODWIT_SECRET_ACCESS_KEY \
        "${GODWIT_IMAGE:-godwit:local}" admin --admin-endpoint "$admin" \
        replication status || true
done
if [[ -n "$GODWIT_PROMETHEUS" ]]; then
    echo
    echo "Prometheus: $GODWIT_PROMETHEUS (Grafana: add it as a Prometheus data source and"
    echo "import deploy/grafana/godwit-replication.json)"
fi
exit "$status"
