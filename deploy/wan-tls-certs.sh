#!/usr/bin/env bash
# Makes deploy/tls/: a private CA (ca.pem) and one certificate per region's
# WAN gateway (hangzhou-wan-gateway, shanghai-wan-gateway), for
# deploy/compose.tls.yaml. Demo material: a real deployment uses its own
# CA or public certificates. Needs openssl; keeps existing files.
set -euo pipefail
DIR="$(cd "$(dirname "$0")" && pwd)/tls"
mkdir -p "$DIR"
cd "$DIR"
if [[ ! -f ca.pem ]]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 825 \
        -subj "/CN=godwit compose WAN CA" -keyout ca.key -out ca.pem 2>/dev/null
fi
for region in hangzhou shanghai; do
    [[ -f $region.pem ]] && continue
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -subj "/CN=$region-wan-gateway" -keyout "$region.key" -out "$region.csr" 2>/dev/null
    printf 'subjectAltName=DNS:%s-wan-gateway,DNS:localhost,IP:127.0.0.1\n' "$region" >"$region.ext"
    openssl x509 -req -in "$region.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 825 \
        -extfile "$region.ext" -out "$region.pem" 2>/dev/null
    rm -f "$region.csr" "$region.ext"
done
chmod 644 ./*.pem ./*.key
echo "$DIR"
