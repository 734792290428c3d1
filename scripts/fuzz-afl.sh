#!/usr/bin/env bash
# Coverage-guided fuzzing with AFL++ through cargo-afl (docs/fuzzing.md).
#
#   scripts/fuzz-afl.sh TARGET SECONDS   # one target
#   scripts/fuzz-afl.sh all SECONDS      # every target in turn, SECONDS each
#
# Targets: auth chunked headers xml block_header block_file records
# (fuzz/src/lib.rs). One afl-fuzz instance at a time; each run starts
# from fuzz/corpus/TARGET and writes fuzz/out/TARGET (crashes in
# fuzz/out/TARGET/default/crashes). Prints execs_done, execs/s, corpus
# size, crashes and hangs from fuzzer_stats.
#
# Needs cargo-afl (`cargo install cargo-afl`, then `cargo afl config
# --build`). CARGO_TARGET_DIR defaults to /var/tmp/godwit-target-afl.
# AFL_SKIP_CPUFREQ and AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES are set so no
# root-only tuning (CPU governor, core_pattern) is needed; set
# GODWIT_AFL_BUILD=0 to skip the build step.
set -euo pipefail

TARGETS=(auth chunked headers xml block_header block_file records)
target=${1:?usage: $0 TARGET|all SECONDS}
seconds=${2:?usage: $0 TARGET|all SECONDS}
root=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/godwit-target-afl}
export AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
export AFL_NO_UI=1 AFL_SKIP_CRASHES=1
cd "$root/fuzz"

if [ "${GODWIT_AFL_BUILD:-1}" != 0 ]; then
    cargo afl build --release
fi

stat() { sed -n "s/^$1 *: *//p" "$2"; }

run() {
    local t=$1 out="$root/fuzz/out/$1"
    rm -rf "$out"
    mkdir -p "$out"
    cargo afl fuzz -V "$seconds" -i "corpus/$t" -o "$out" \
        "$CARGO_TARGET_DIR/release/$t" >"$out/afl.log" 2>&1 || {
        echo "$t: afl-fuzz failed, see $out/afl.log" >&2
        tail -20 "$out/afl.log" >&2
        return 1
    }
    local s="$out/default/fuzzer_stats"
    printf '%-13s %6s s  execs_done %10s  execs/s %8s  corpus %5s  crashes %3s  hangs %3s\n' \
        "$t" "$(stat run_time "$s")" "$(stat execs_done "$s")" "$(stat execs_per_sec "$s")" \
        "$(stat corpus_count "$s")" "$(stat saved_crashes "$s")" "$(stat saved_hangs "$s")"
    if [ "$(stat saved_crashes "$s")" != 0 ]; then
        ls "$out/default/crashes" | grep -v README | sed "s|^|    $out/default/crashes/|"
    fi
}

if [ "$target" = all ]; then
    for t in "${TARGETS[@]}"; do run "$t"; done
else
    run "$target"
fi
