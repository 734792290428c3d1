#!/usr/bin/env bash
# Fails when a crate of the workspace declares a dependency its code does
# not use (cargo-machete, installed on first use into $TOOLS_ROOT). A
# dependency machete cannot see (used only through a macro, or a build
# feature) is listed under [package.metadata.cargo-machete] `ignored` in
# that crate's Cargo.toml, with the reason beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS_ROOT="${GODWIT_TOOLS_ROOT:-/var/tmp/cargo-tools}"
MACHETE="$TOOLS_ROOT/bin/cargo-machete"
if [ ! -x "$MACHETE" ]; then
    echo "installing cargo-machete into $TOOLS_ROOT..." >&2
    CARGO_TARGET_DIR="$TOOLS_ROOT/target" cargo install --quiet --locked \
        --root "$TOOLS_ROOT" cargo-machete@0.9.2 >&2
fi
# --with-metadata: real library names from cargo metadata (md-5 is `md5`).
"$MACHETE" --with-metadata . fuzz
