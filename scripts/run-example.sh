#!/usr/bin/env bash
# The main job on the bundled example: builds msprobe, generates the repro
# script of Mint.matmul.0 (backward, real data) from the MindSpore dump in
# examples/mindspore/, then runs it, which writes the two accuracy CSVs under
# out/op_result_output/. Creates the Python environment first when missing,
# with what the job needs only (the test command adds the test oracles).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="$(scripts/setup-python-env.sh --main | tail -n 1)"
cargo run --quiet --bin msprobe -- -f mindspore op_generate -i examples/mindspore/config_op.json -o out/
cd out
"$PYTHON" Mint.matmul.0.backward.py
