#!/usr/bin/env bash
# `docker compose` (v2) or `docker-compose` (v1.29), whichever is here, on
# deploy/compose.yaml with deploy/.env:  deploy/compose.sh up -d | ps | logs -f | down -v
set -euo pipefail
DIR="$(cd "$(dirname "$0")" && pwd)"
if docker compose version >/dev/null 2>&1; then
    exec docker compose --project-directory "$DIR" -f "$DIR/compose.yaml" "$@"
elif command -v docker-compose >/dev/null; then
    exec docker-compose --project-directory "$DIR" -f "$DIR/compose.yaml" "$@"
fi
echo "neither 'docker compose' nor 'docker-compose' is installed" >&2
exit 1
