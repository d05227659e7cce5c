# Sourced by scripts/test.sh and scripts/fresh-check.sh: wall times of named stages.
#
#   stage NAME COMMAND...   runs COMMAND (set -e stops the caller when it fails) and records its wall time
#   stage_times             prints the recorded stages and the total since sourcing, in seconds
STAGES=()
STAGES_START=$(date +%s)

stage() {
    local name=$1 start
    shift
    start=$(date +%s)
    "$@"
    STAGES+=("$(printf '%6d  %s' "$(($(date +%s) - start))" "$name")")
}

stage_times() {
    [ "${#STAGES[@]}" -eq 0 ] || printf '%s\n' "${STAGES[@]}"
    printf '%6d  %s\n' "$(($(date +%s) - STAGES_START))" "total"
}
