#!/usr/bin/env bash
# What TLS costs a 1 MiB GET (docs/benchmarks-history.md §9). The same
# server and load, plain HTTP and TLS (rustls, ring; a throwaway CA and
# certificate made here with openssl), alternated twice in one run so that a
# busy machine hurts both alike. 16 connections, kept alive: the handshake
# cost is paid once per connection; what is measured is encryption of the
# bodies.
source "$(dirname "$0")/lib.sh"

PKI=$SCRATCH/tls
rm -rf "$PKI" && mkdir -p "$PKI"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
  -subj "/CN=godwit bench CA" -keyout "$PKI/ca.key" -out "$PKI/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -subj "/CN=godwit bench" -keyout "$PKI/server.key" -out "$PKI/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$PKI/ext.cnf"
openssl x509 -req -in "$PKI/server.csr" -CA "$PKI/ca.pem" -CAkey "$PKI/ca.key" \
  -CAcreateserial -days 1 -extfile "$PKI/ext.cnf" -out "$PKI/server.pem" 2>/dev/null

OBJECTS=${OBJECTS:-200}
for round in 1 2; do
  SCHEME=http E=http://$S3_ADDR CURL_CA= start_server "$@"
  SCHEME=http E=http://$S3_ADDR gbench "tls-plain-get-$round" --op get --size 1MiB \
    --concurrency 16 --duration "$DUR" --objects "$OBJECTS" --cleanup
  stop_server
  SCHEME=https CURL_CA=$PKI/ca.pem start_server --tls-cert "$PKI/server.pem" --tls-key "$PKI/server.key" "$@"
  SCHEME=https E=https://$S3_ADDR gbench "tls-tls-get-$round" --op get --size 1MiB \
    --concurrency 16 --duration "$DUR" --objects "$OBJECTS" --cleanup --ca-file "$PKI/ca.pem"
  stop_server
done
