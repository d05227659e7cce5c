#!/usr/bin/env bash
# Runs every test of the workspace: the form (cargo fmt --check, clippy with
# -D warnings, ruff), the Python package's unit tests (pytest, python/tests),
# then cargo's unit, golden, CLI, and
# end-to-end tests that run generated scripts with real torch, MindSpore and
# MSAdapter on the CPU, and a type check of the fuzz crate; then,
# without arguments, the wheel as users install it, beside mindstudio-probe
# (scripts/test-wheel.sh, about a minute and a half).
# Creates the Python environment first when it is missing (see
# scripts/setup-python-env.sh). Extra arguments go to `cargo test` (and skip
# the wheel).
#
# The script sweeps (every call of the fixture dumps through its generated
# script) run a fixed, seeded sample by default; MSPROBE_RS_SWEEP=full runs
# all of them (README, "Tests").
#
# At the end, pass or fail, it prints each stage's wall time and each cargo
# test binary's (as libtest reports it), slowest first.
set -euo pipefail
cd "$(dirname "$0")/.."

LOG=$(mktemp "${TMPDIR:-/tmp}/msprobe-rs-test.XXXXXX")
# shellcheck source=scripts/stage-times.sh
. scripts/stage-times.sh

# Prints the stage times and the test binaries' times, slowest first.
summary() {
    local status=$?
    echo
    echo "== stage times (wall, s) =="
    stage_times
    if [ -s "$LOG" ]; then
        echo "== cargo test binaries (wall, s, slowest first) =="
        awk '
            /^ *Running / {
                name = $2
                if (name == "unittests") {  # which crate: the binary, less its hash
                    bin = $NF; sub(/.*\//, "", bin); sub(/-[0-9a-f]+\)$/, "", bin)
                    name = "unittests " $3 " (" bin ")"
                }
            }
            /^ *Doc-tests / { name = "doc-tests " $2 }
            /^test result: / && name != "" {
                t = $NF; sub(/s$/, "", t); printf "%9.1f  %s\n", t, name; name = ""
            }' "$LOG" | sort -rn
    fi
    rm -f "$LOG"
    [ "$status" -eq 0 ] || echo "scripts/test.sh: failed (exit $status)"
    exit "$status"
}
trap summary EXIT

setup_python() { MSPROBE_PYTHON="$(scripts/setup-python-env.sh | tail -n 1)"; }
stage "python environment (scripts/setup-python-env.sh)" setup_python
export MSPROBE_PYTHON
# The MSAdapter environment (mindspore-dev 2.6.0.dev20250323, mindtorch 0.4.0, the
# real torch): tests/e2e.rs runs the scripts of MSAdapter dumps with it.
setup_mindtorch() { MSPROBE_MINDTORCH_PYTHON="$(scripts/setup-mindtorch-env.sh | tail -n 1)"; }
stage "MSAdapter environment (scripts/setup-mindtorch-env.sh)" setup_mindtorch
export MSPROBE_MINDTORCH_PYTHON
# The HTML report's browser test needs headless Chromium.
stage "chromium (scripts/setup-browser.sh)" scripts/setup-browser.sh >/dev/null
# tests/slurm.rs starts a single-node Slurm (slurm-wlm, munge) and reads the
# Kubernetes example with python3-yaml.
stage "slurm (scripts/setup-slurm.sh)" scripts/setup-slurm.sh >/dev/null
# The form: rustfmt (rustfmt.toml), clippy with warnings as errors (the allowed
# lints and their reasons: [workspace.lints] of Cargo.toml), ruff (pyproject.toml).
stage "cargo fmt --check" cargo fmt --check
stage "cargo clippy -D warnings" cargo clippy --workspace --all-targets --quiet -- -D warnings
stage "ruff" "$MSPROBE_PYTHON" -m ruff check --no-cache python/ scripts/mindtorch_env/ tests/loss_effect/ tests/minimize/
stage "pytest python/tests" "$MSPROBE_PYTHON" -m pytest -q -p no:cacheprovider python/tests
stage "cargo build (tests)" cargo test --workspace --no-run "$@"
# libtest prints each binary's time on its "test result" line; the log keeps them for the summary.
cargo_test() { cargo test --workspace --no-fail-fast "$@" 2>&1 | tee "$LOG"; }
stage "cargo test --workspace" cargo_test "$@"
# The cargo-fuzz crate is its own workspace (it needs nightly to fuzz):
# type-checked here on stable so that its targets keep compiling.
stage "cargo check fuzz/" cargo check --manifest-path fuzz/Cargo.toml --bins --quiet
if [ $# -eq 0 ]; then
    stage "wheel (scripts/test-wheel.sh)" scripts/test-wheel.sh
fi
