#!/usr/bin/env bash
# Makes the network the two compose regions share (`wan`, bridge
# `godwit-wan`) behave like a WAN link: run on the Docker host, as root
# (tc needs CAP_NET_ADMIN in the host's network namespace).
#
#   deploy/wan-delay.sh 30                 # +30 ms each way (RTT +60 ms) between regions
#   deploy/wan-delay.sh 30 --jitter 5      # 30 ± 5 ms
#   deploy/wan-delay.sh 30 --rate 200mbit  # and at most 200 Mbit/s into each container
#   deploy/wan-delay.sh 0 --rate 200mbit   # bandwidth only (tbf; no netem needed)
#   deploy/wan-delay.sh off                # remove
#   deploy/wan-delay.sh show
#
# How: every container on `wan` (the gateways and the replicators) has a
# veth whose host end is a port of the bridge; a qdisc on that host end
# delays what the bridge sends into the container. A request from one
# region's replicator to the other's gateway is delayed once on the way in,
# its answer once on the way back. Published ports and each region's
# internal traffic use the region's own network, so they are not slowed.
# Containers started (or restarted) later get new veths: run it again.
# The delay needs the kernel's netem scheduler (CONFIG_NET_SCH_NETEM,
# module sch_netem); the bandwidth-only form uses tbf.
set -euo pipefail
BRIDGE="${GODWIT_WAN_BRIDGE:-godwit-wan}"

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 1 ]] || usage
action="$1"; shift
jitter=""; rate=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --jitter) jitter="$2"; shift 2 ;;
        --rate) rate="$2"; shift 2 ;;
        *) usage ;;
    esac
done

command -v tc >/dev/null || { echo "tc not found: install iproute2" >&2; exit 1; }
ip link show "$BRIDGE" >/dev/null 2>&1 || {
    echo "no bridge $BRIDGE: start the regions first (deploy/compose.sh up -d)" >&2; exit 1; }
mapfile -t ports < <(ip -o link show master "$BRIDGE" | awk -F': ' '{print $2}' | cut -d@ -f1)
[[ ${#ports[@]} -gt 0 ]] || { echo "nothing is attached to $BRIDGE" >&2; exit 1; }

remove() {
    for p in "${ports[@]}"; do tc qdisc del dev "$p" root 2>/dev/null || true; done
    echo "wan: no delay on ${#ports[@]} ports of $BRIDGE"
}
case "$action" in
    show)
        for p in "${ports[@]}"; do tc qdisc show dev "$p" root; done
        exit 0 ;;
    off) remove; exit 0 ;;
    0) [[ -n "$rate" ]] || { remove; exit 0; } ;;
    *[!0-9]*|"") usage ;;
esac

ms="$action"
for p in "${ports[@]}"; do
    if [[ "$ms" -gt 0 ]]; then
        args=(netem delay "${ms}ms")
        [[ -n "$jitter" ]] && args+=("${jitter}ms" distribution normal)
        [[ -n "$rate" ]] && args+=(rate "$rate")
    elif [[ -n "$rate" ]]; then
        args=(tbf rate "$rate" burst 256kb latency 50ms)
    fi
    if ! out="$(tc qdisc replace dev "$p" root "${args[@]}" 2>&1)"; then
        echo "tc qdisc replace dev $p root ${args[*]}: $out" >&2
        [[ "$out" == *"qdisc kind is unknown"* ]] && \
            echo "this kernel has no ${args[0]} scheduler (CONFIG_NET_SCH_${args[0]^^}); try: modprobe sch_${args[0]}" >&2
        exit 1
    fi
done
echo "wan: ${args[*]} on ${#ports[@]} ports of $BRIDGE (inter-region RTT +$((2 * ms)) ms)"
