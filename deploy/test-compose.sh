#!/usr/bin/env bash
# End-to-end test of the container deployment: builds the images, starts
# the two regions of deploy/compose.yaml, waits until every service is
# healthy and both regions are registered as remotes of each other (bounded),
# runs the seed's verification (deploy/demo.sh: oss2, aws-cli), checks
# that every object replicated in both directions, then checks Prometheus
# (deploy/check-prometheus.py: every target up, the demo's rules as it sees
# them, every query of the Grafana dashboard); `down -v` on every path
# out. Prints how long each step took.
#
#   GODWIT_COMPOSE_UP_TIMEOUT   seconds to wait for health (default 240)
#   GODWIT_DEMO_ARGS            demo options (default: 2,000 small files,
#                               a 128 MiB file in 16 MiB parts)
set -euo pipefail
cd "$(dirname "$0")/.."

COMPOSE=./deploy/compose.sh
PROJECT="${COMPOSE_PROJECT_NAME:-$(sed -n 's/^COMPOSE_PROJECT_NAME=//p' deploy/.env)}"
UP_TIMEOUT="${GODWIT_COMPOSE_UP_TIMEOUT:-240}"
read -r -a DEMO_ARGS <<<"${GODWIT_DEMO_ARGS:---small-files 2000 --large-size 128MiB --part-size 16MiB --timeout 300}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/godwit-compose-test.XXXXXX")"

t0=$(date +%s)
step_start=$t0
step() {
    local now
    now=$(date +%s)
    echo "== $1 (previous step $((now - step_start)) s)"
    step_start=$now
}

cleanup() {
    local rc=$?
    if [[ $rc -ne 0 ]]; then
        echo "== failed (exit $rc): service states and recent logs"
        docker ps -a --filter "label=com.docker.compose.project=$PROJECT" \
            --format '{{.Names}}\t{{.Status}}' || true
        $COMPOSE logs --no-color --tail=40 2>&1 | tail -400 || true
    fi
    echo "== down -v"
    $COMPOSE down -v --remove-orphans >/dev/null 2>&1 || true
    rm -rf "$WORK"
    echo "== total $(( $(date +%s) - t0 )) s"
    exit "$rc"
}
trap cleanup EXIT

step "build image"
./deploy/build-image.sh

step "up -d"
# A deployment of this project left running is replaced.
$COMPOSE down -v --remove-orphans >/dev/null 2>&1 || true
# Published ports must be free, or `up` fails half-way.
for port in "${HANGZHOU_S3_PORT:-9000}" "${HANGZHOU_ADMIN_PORT:-9001}" "${HANGZHOU_REPLICATOR_PORT:-9002}" \
    "${SHANGHAI_S3_PORT:-9100}" "${SHANGHAI_ADMIN_PORT:-9101}" "${SHANGHAI_REPLICATOR_PORT:-9102}" \
    "${PROMETHEUS_PORT:-9090}"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        echo "127.0.0.1:$port is in use; move it with HANGZHOU_S3_PORT=..., PROMETHEUS_PORT=... (deploy/compose.yaml)" >&2
        exit 1
    fi
done

$COMPOSE up -d

step "wait until healthy (at most $UP_TIMEOUT s)"
services="$($COMPOSE config --services)"
deadline=$(( $(date +%s) + UP_TIMEOUT ))
while :; do
    waiting=()
    for svc in $services; do
        id="$(docker ps -aq --filter "label=com.docker.compose.project=$PROJECT" \
            --filter "label=com.docker.compose.service=$svc" | head -1)"
        if [[ -z "$id" ]]; then
            waiting+=("$svc:not-created")
            continue
        fi
        state="$(docker inspect -f '{{.State.Status}} {{.State.ExitCode}} {{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}' "$id")"
        read -r status code health <<<"$state"
        case "$svc" in
            *-remotes)
                # One-shot: done when it exited 0.
                if [[ "$status" == exited && "$code" != 0 ]]; then
                    echo "$svc failed (exit $code):"; docker logs "$id" 2>&1 | tail -20
                    exit 1
                fi
                [[ "$status" == exited ]] || waiting+=("$svc:$status") ;;
            *)
                [[ "$health" == healthy ]] || waiting+=("$svc:$status/$health") ;;
        esac
    done
    [[ ${#waiting[@]} -eq 0 ]] && break
    if [[ $(date +%s) -ge $deadline ]]; then
        echo "not healthy after $UP_TIMEOUT s: ${waiting[*]}" >&2
        exit 1
    fi
    sleep 2
done
echo "all $(wc -w <<<"$services") services healthy; remotes registered"
for svc in $services; do
    [[ "$svc" == *datanode* ]] || continue
    id="$(docker ps -q --filter "label=com.docker.compose.project=$PROJECT" \
        --filter "label=com.docker.compose.service=$svc" | head -1)"
    echo "$svc I/O: $(docker logs "$id" 2>&1 | grep -o 'backend="[a-z_]*"' | head -1)"
done

step "demo: ${DEMO_ARGS[*]}"
./deploy/demo.sh "${DEMO_ARGS[@]}" --json "$WORK/report.json"

step "assert replication in both directions"
VENV="$(./scripts/pytest-env.sh)"
"$VENV/bin/python" - "$WORK/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert not r["failures"], r["failures"]
assert r["verified"] and all(r["verified"].values()), r["verified"]
assert r["verified_small_files"] is True
assert r["reverse"]["replicated_secs"] is not None, r["reverse"]
for p in r["phases"]:
    for d in p["destinations"]:
        assert d["replicated_secs"] is not None, (p["pattern"], d)
print("replicated: " + ", ".join(
    f"{p['pattern']} -> {d['bucket']} in {d['replicated_secs']:.2f} s"
    for p in r["phases"] for d in p["destinations"]))
print(f"reverse: {r['reverse']['files']} files in {r['reverse']['replicated_secs']:.2f} s")
PY

step "Prometheus: targets, the demo's rules, the Grafana dashboard's queries"
"$VENV/bin/python" deploy/check-prometheus.py \
    --prometheus "http://127.0.0.1:${PROMETHEUS_PORT:-9090}" \
    --metrics "http://127.0.0.1:${HANGZHOU_REPLICATOR_PORT:-9002}" \
    --report "$WORK/report.json" --dashboard deploy/grafana/godwit-replication.json
step "done"
