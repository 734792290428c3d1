# Sourced by scripts/test.sh and .ci/run: `phase NAME` starts a phase and
# prints the time the previous one took; `phase_end` prints the last one
# and the total, so that a slowdown shows in the CI log.
PHASE_NAME=""
PHASE_START=$(date +%s)
PHASE_T0=${PHASE_T0:-$PHASE_START}
export PHASE_T0
phase() {
    local now
    now=$(date +%s)
    if [[ -n "$PHASE_NAME" ]]; then
        echo "== phase time: $PHASE_NAME $((now - PHASE_START)) s"
    fi
    echo "== $1"
    PHASE_NAME=$1
    PHASE_START=$now
}
phase_end() {
    local now
    now=$(date +%s)
    if [[ -n "$PHASE_NAME" ]]; then
        echo "== phase time: $PHASE_NAME $((now - PHASE_START)) s"
    fi
    PHASE_NAME=""
    echo "== total so far: $((now - PHASE_T0)) s"
}
