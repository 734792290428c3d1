#!/usr/bin/env bash
# Builds the container image `godwit:local` FROM scratch, offline: the
# release binary, exactly the shared libraries `ldd` names (and the dynamic
# loader) at the same paths, an empty /tmp and a one-line nsswitch.conf.
# No base image is pulled, so it works without a registry. One image, every
# role: the entrypoint is `/godwit`, the compose file picks the subcommand.
# Then the compose deployment's Prometheus image, the same way
# (deploy/build-prometheus-image.sh).
#
#   GODWIT_IMAGE      tag to build (default godwit:local)
#   CARGO_TARGET_DIR  where the release binary is built (default /var/tmp/godwit-target)
#   GODWIT_NO_BUILD=1 use the binary as it is, even if sources are newer
#   GODWIT_IMAGE_KEEP_DEBUG=1  keep the binary's line tables (default: stripped)
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${GODWIT_IMAGE:-godwit:local}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/godwit-target}"
BIN="$CARGO_TARGET_DIR/release/godwit"

# Rebuild when the binary is missing or any workspace source is newer.
# (One cargo invocation over the whole workspace in the release profile:
# another selection would compile RocksDB's C++ again.)
stale() {
    [[ ! -x "$BIN" ]] && return 0
    [[ "${GODWIT_NO_BUILD:-0}" == 1 ]] && return 1
    [[ -n "$(find Cargo.toml Cargo.lock src common meta datanode gateway replication tools \
        \( -name '*.rs' -o -name Cargo.toml -o -name Cargo.lock \) -newer "$BIN" -print -quit)" ]]
}
if stale; then
    echo "== cargo build --release --workspace" >&2
    ./scripts/ensure-deps.sh
    cargo build --release --workspace
fi
[[ -x "$BIN" ]] || { echo "no binary at $BIN" >&2; exit 1; }

CTX="$(mktemp -d "${TMPDIR:-/tmp}/godwit-image.XXXXXX")"
trap 'rm -rf "$CTX"' EXIT
ROOT="$CTX/rootfs"
mkdir -p "$ROOT/tmp" "$ROOT/etc"
chmod 1777 "$ROOT/tmp"
cp "$BIN" "$ROOT/godwit"
# The release profile keeps line tables for backtraces (hundreds of MB);
# the image keeps the symbols only, unless GODWIT_IMAGE_KEEP_DEBUG=1.
if [[ "${GODWIT_IMAGE_KEEP_DEBUG:-0}" != 1 ]] && command -v objcopy >/dev/null; then
    objcopy --strip-debug "$ROOT/godwit"
fi

# Every library the binary loads, and the loader itself (the absolute path
# on the `ld-linux` line is the binary's PT_INTERP). Copied dereferenced to
# the paths ldd names, which are on the loader's default search path.
libs="$(ldd "$BIN" | awk '/=> \//{print $3} /^[[:space:]]*\//{print $1}')"
[[ -n "$libs" ]] || { echo "ldd named no libraries for $BIN (a static binary needs none; check)" >&2; }
for lib in $libs; do
    mkdir -p "$ROOT$(dirname "$lib")"
    cp -L "$lib" "$ROOT$lib"
done
# glibc >= 2.34 has the files and dns NSS modules built in; say in which
# order to use them (Docker mounts /etc/hosts and /etc/resolv.conf).
echo 'hosts: files dns' > "$ROOT/etc/nsswitch.conf"

REV="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
cat > "$CTX/Dockerfile" <<DOCKERFILE
FROM scratch
COPY rootfs/ /
LABEL org.opencontainers.image.title="godwit" \\
      org.opencontainers.image.description="S3-compatible object store with cross-region replication" \\
      org.opencontainers.image.revision="$REV"
# 9000 S3, 9001 admin (/health, /metrics), 9002 meta (Raft + RPC), 9003 blocks.
EXPOSE 9000 9001 9002 9003
ENTRYPOINT ["/godwit"]
CMD ["--help"]
DOCKERFILE

# BuildKit needs the buildx plugin with a recent docker CLI; the classic
# builder does the same for a FROM scratch + COPY file.
if ! docker buildx version >/dev/null 2>&1; then
    export DOCKER_BUILDKIT=0
fi
echo "== docker build -t $IMAGE ($(du -sh "$ROOT" | cut -f1) rootfs: godwit + $(wc -w <<<"$libs") libraries)" >&2
# (The classic builder's deprecation notice is shown only with a failure.)
if ! out="$(docker build -q -t "$IMAGE" "$CTX" 2>&1)"; then
    echo "$out" >&2
    exit 1
fi
# The image this tag named before is now untagged: remove it (only
# dangling godwit images; nothing else is touched).
docker image prune -f --filter "label=org.opencontainers.image.title=godwit" >/dev/null
docker run --rm "$IMAGE" --version

# The compose deployment's other image: its Prometheus, FROM scratch too.
./deploy/build-prometheus-image.sh
