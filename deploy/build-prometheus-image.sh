#!/usr/bin/env bash
# Builds the Prometheus image of the compose deployment, `godwit-prometheus:local`,
# FROM scratch and offline, the way deploy/build-image.sh builds Godwit's:
# Debian's `prometheus` and `promtool` binaries (Go programs linked against
# glibc), exactly the shared libraries `ldd` names and the dynamic loader at
# the same paths, a one-line nsswitch.conf, deploy/prometheus/prometheus.yml
# as /etc/prometheus/prometheus.yml and an empty /prometheus for the TSDB.
# promtool is there for the health check (`promtool query instant`: the
# query API answers once Prometheus is ready), since the image has no shell.
#
# The binaries come from Debian's `prometheus` package: the installed one
# when /usr/bin/prometheus exists, else the package fetched with
# `apt-get download` and unpacked into $GODWIT_PROMETHEUS_CACHE (installing
# it would also start a prometheus daemon on the host, which nothing needs).
#
#   GODWIT_PROMETHEUS_IMAGE  tag to build (default godwit-prometheus:local)
#   GODWIT_PROMETHEUS_CACHE  where the package is unpacked (default /var/tmp/godwit-prometheus)
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${GODWIT_PROMETHEUS_IMAGE:-godwit-prometheus:local}"
CACHE="${GODWIT_PROMETHEUS_CACHE:-/var/tmp/godwit-prometheus}"
CONFIG=deploy/prometheus/prometheus.yml

# Debian's package, installed or unpacked into the cache.
if [[ -x /usr/bin/prometheus && -x /usr/bin/promtool ]]; then
    BIN_DIR=/usr/bin
    VERSION="$(dpkg-query -W -f '${Version}' prometheus 2>/dev/null || echo unknown)"
else
    BIN_DIR="$CACHE/root/usr/bin"
    if [[ ! -x "$BIN_DIR/prometheus" || ! -x "$BIN_DIR/promtool" ]]; then
        command -v apt-get >/dev/null || { echo "no /usr/bin/prometheus and no apt-get: install Debian's prometheus package" >&2; exit 1; }
        echo "== fetching Debian's prometheus package into $CACHE" >&2
        rm -rf "$CACHE/deb" "$CACHE/root"
        mkdir -p "$CACHE/deb"
        # (As root, apt warns that it downloads unsandboxed; only a failure is shown.)
        if ! out="$(cd "$CACHE/deb" && apt-get download prometheus 2>&1)"; then
            [[ "$(id -u)" == 0 ]] || { echo "$out" >&2; echo "apt-get update (as root) may be needed" >&2; exit 1; }
            apt-get update >/dev/null
            (cd "$CACHE/deb" && apt-get download prometheus >/dev/null 2>&1)
        fi
        dpkg-deb -x "$CACHE"/deb/prometheus_*.deb "$CACHE/root"
    fi
    VERSION="$(dpkg-deb -f "$CACHE"/deb/prometheus_*.deb Version 2>/dev/null || echo unknown)"
fi
"$BIN_DIR/promtool" check config "$CONFIG" >/dev/null

CTX="$(mktemp -d "${TMPDIR:-/tmp}/godwit-prometheus-image.XXXXXX")"
trap 'rm -rf "$CTX"' EXIT
ROOT="$CTX/rootfs"
mkdir -p "$ROOT/bin" "$ROOT/etc/prometheus" "$ROOT/prometheus" "$ROOT/tmp"
chmod 1777 "$ROOT/tmp"
cp "$BIN_DIR/prometheus" "$BIN_DIR/promtool" "$ROOT/bin/"
cp "$CONFIG" "$ROOT/etc/prometheus/prometheus.yml"

# Every library either binary loads, and the loader (as in build-image.sh).
libs="$(for bin in prometheus promtool; do ldd "$BIN_DIR/$bin"; done \
    | awk '/=> \//{print $3} /^[[:space:]]*\//{print $1}' | sort -u)"
for lib in $libs; do
    mkdir -p "$ROOT$(dirname "$lib")"
    cp -L "$lib" "$ROOT$lib"
done
# Go's resolver reads nsswitch.conf; Docker mounts /etc/hosts and
# /etc/resolv.conf (service names resolve through Docker's DNS).
echo 'hosts: files dns' > "$ROOT/etc/nsswitch.conf"

cat > "$CTX/Dockerfile" <<DOCKERFILE
FROM scratch
COPY rootfs/ /
LABEL org.opencontainers.image.title="godwit-prometheus" \\
      org.opencontainers.image.description="Prometheus (Debian $VERSION) scraping a Godwit compose deployment" \\
      org.opencontainers.image.version="$VERSION"
EXPOSE 9090
VOLUME /prometheus
ENTRYPOINT ["/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus", "--web.listen-address=0.0.0.0:9090"]
DOCKERFILE

if ! docker buildx version >/dev/null 2>&1; then
    export DOCKER_BUILDKIT=0
fi
echo "== docker build -t $IMAGE ($(du -sh "$ROOT" | cut -f1) rootfs: prometheus $VERSION + promtool + $(wc -w <<<"$libs") libraries)" >&2
if ! out="$(docker build -q -t "$IMAGE" "$CTX" 2>&1)"; then
    echo "$out" >&2
    exit 1
fi
docker image prune -f --filter "label=org.opencontainers.image.title=godwit-prometheus" >/dev/null
docker run --rm "$IMAGE" --version | head -1
