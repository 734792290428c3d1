#!/usr/bin/env bash
# `docker compose` (v2) or `docker-compose` (v1.29), whichever is here, on
# deploy/compose.yaml with deploy/.env:  deploy/compose.sh up -d | ps | logs -f | down -v
set -euo pipefail
DIR="$(cd "$(dirname "$0")" && pwd)"
FILES=(-f "$DIR/compose.yaml")
# GODWIT_WAN_TLS=1: replication between the regions over TLS
# (compose.tls.yaml; certificates from wan-tls-certs.sh).
if [[ "${GODWIT_WAN_TLS:-0}" == 1 ]]; then
    "$DIR/wan-tls-certs.sh" >/dev/null
    FILES+=(-f "$DIR/compose.tls.yaml")
fi
if docker compose version >/dev/null 2>&1; then
    exec docker compose --project-directory "$DIR" "${FILES[@]}" "$@"
elif command -v docker-compose >/dev/null; then
    exec docker-compose --project-directory "$DIR" "${FILES[@]}" "$@"
fi
echo "neither 'docker compose' nor 'docker-compose' is installed" >&2
exit 1
