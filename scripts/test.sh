#!/usr/bin/env bash
# Runs every test of the workspace: unit, golden, CLI, and end-to-end tests
# that run generated scripts with real torch and MindSpore on the CPU.
# Creates the Python environment first when it is missing (see
# scripts/setup-python-env.sh). Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
MSPROBE_PYTHON="$(scripts/setup-python-env.sh | tail -n 1)"
export MSPROBE_PYTHON
cargo test --workspace "$@"
