#!/usr/bin/env bash
# The fresh-machine check: runs the README's two commands (scripts/run-example.sh,
# then scripts/test.sh under CI=true, as .ci/run does) from a clean clone of this
# repository's HEAD, with every cache pointed at an empty folder, so that a step
# that works only because something outside the project's scripts put a file in
# reach fails here instead of on a new machine. Prints each stage's wall time;
# exits non-zero on the first failure.
#
#   scripts/fresh-check.sh [WORK]     WORK: an empty or missing folder
#                                     (default: a new temporary one)
#
# Pointed at WORK: the clone (WORK/main, with ../shared beside it as CI has it),
# XDG_CACHE_HOME (the Python environments MSPROBE_RS_VENV and the MSAdapter venv,
# msprobe 8.3.2 and 26.2.0's folders, the wheel test's tools, pip's cache),
# CARGO_HOME (the crate registry; the toolchain stays rustup's) and
# CARGO_TARGET_DIR. Chromium and Slurm are Debian packages, installed system-wide:
# MSPROBE_RS_REINSTALL=1 makes scripts/setup-browser.sh and scripts/setup-slurm.sh
# skip their "already installed" detection and download and install them again.
# WORK is removed after a pass (kept after a failure, for its logs): it holds
# several GB.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-$(mktemp -d "${TMPDIR:-/tmp}/msprobe-rs-fresh.XXXXXX")}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
if [ -n "$(ls -A "$WORK")" ]; then
    echo "fresh-check: $WORK is not empty" >&2
    exit 2
fi

# shellcheck source=scripts/stage-times.sh
. "$REPO/scripts/stage-times.sh"
finish() {
    local status=$?
    echo
    echo "== fresh-check stage times (wall, s) =="
    stage_times
    if [ "$status" -eq 0 ]; then
        echo "fresh-check: pass"
        rm -rf "$WORK"
    else
        echo "fresh-check: FAILED (exit $status); logs and caches kept in $WORK"
    fi
    exit "$status"
}
trap finish EXIT

# logged NAME COMMAND...: COMMAND's output to WORK/NAME.log and to the terminal.
logged() {
    local name=$1
    shift
    echo "== fresh-check: $name ==" >&2
    "$@" 2>&1 | tee "$WORK/$name.log"
}

git clone --quiet --no-local "$REPO" "$WORK/main"
ln -s "$(cd "$REPO/../shared" && pwd)" "$WORK/shared"
export XDG_CACHE_HOME="$WORK/cache"
export CARGO_HOME="$WORK/cargo-home"
export CARGO_TARGET_DIR="$WORK/target"
export PATH="$HOME/.cargo/bin:$PATH"
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
export MSPROBE_RS_REINSTALL=1
unset MSPROBE_RS_VENV MSPROBE_RS_MINDTORCH_VENV MSPROBE_832 MSPROBE_26 MSPROBE_26_PT_EXTRA \
    MSPROBE_PYTHON MSPROBE_MINDTORCH_PYTHON PIP_CACHE_DIR PYTHONPATH
export CI=true

cd "$WORK/main"
echo "fresh-check: $(git rev-parse --short HEAD) in $WORK" >&2
stage run-example logged run-example scripts/run-example.sh
stage test logged test scripts/test.sh
