#!/usr/bin/env bash
# Runs every test of the workspace: the Python package's linter (ruff) and
# unit tests (pytest, python/tests), then cargo's unit, golden, CLI, and
# end-to-end tests that run generated scripts with real torch, MindSpore and
# MSAdapter on the CPU, and a type check of the fuzz crate; then,
# without arguments, the wheel as users install it, beside mindstudio-probe
# (scripts/test-wheel.sh, about a minute and a half).
# Creates the Python environment first when it is missing (see
# scripts/setup-python-env.sh). Extra arguments go to `cargo test` (and skip
# the wheel).
set -euo pipefail
cd "$(dirname "$0")/.."
MSPROBE_PYTHON="$(scripts/setup-python-env.sh | tail -n 1)"
export MSPROBE_PYTHON
# The MSAdapter environment (mindspore-dev 2.6.0.dev20250323, mindtorch 0.4.0, the
# real torch): tests/e2e.rs runs the scripts of MSAdapter dumps with it.
MSPROBE_MINDTORCH_PYTHON="$(scripts/setup-mindtorch-env.sh | tail -n 1)"
export MSPROBE_MINDTORCH_PYTHON
# The HTML report's browser test needs headless Chromium.
scripts/setup-browser.sh >/dev/null
# tests/slurm.rs starts a single-node Slurm (slurm-wlm, munge) and reads the
# Kubernetes example with python3-yaml.
scripts/setup-slurm.sh >/dev/null
"$MSPROBE_PYTHON" -m ruff check --no-cache python/ scripts/mindtorch_env/
"$MSPROBE_PYTHON" -m pytest -q -p no:cacheprovider python/tests
cargo test --workspace "$@"
# The cargo-fuzz crate is its own workspace (it needs nightly to fuzz):
# type-checked here on stable so that its targets keep compiling.
cargo check --manifest-path fuzz/Cargo.toml --bins --quiet
if [ $# -eq 0 ]; then
    scripts/test-wheel.sh
fi
