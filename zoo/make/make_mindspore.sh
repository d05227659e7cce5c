#!/usr/bin/env bash
# Make the MindSpore half of the model zoo: one training step of each model in
# zoo/make/mindspore/ms_*.py, dumped by the real msprobe 26.2.0 (PyPI mindstudio-probe) on
# MindSpore 2.10 CPU, task statistics and task tensor at level L1; the dump.json files (and the
# tensor dumps' dump_tensor_data/) are copied to tests/fixtures/zoo/mindspore/<model>/.
#
#   zoo/make/make_mindspore.sh [model ...]      (default: every zoo/make/mindspore/ms_*.py)
#
# Environment (defaults in brackets):
#   MSPROBE_RS_CACHE   [$HOME/.cache/msprobe-rs]
#   PYTHON             [$MSPROBE_RS_CACHE/venv/bin/python]: mindspore 2.10 with numpy 1.x
#                      (scripts/setup-python-env.sh makes it)
#   MSPROBE_MS_TARGET  [$MSPROBE_RS_CACHE/msprobe-26.2.0]: msprobe 26.2.0 and the runtime
#                      dependencies the venv lacks, installed with pip --target, so msprobe
#                      never enters the venv (nor changes its mindspore / numpy / torch)
#   MSPROBE_WHEEL_DIR  [$MSPROBE_RS_CACHE/wheels]: a folder holding the mindstudio-probe wheel, used first
#                      when present (pip --find-links); PyPI otherwise
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${MSPROBE_RS_CACHE:-$HOME/.cache/msprobe-rs}
PY=${PYTHON:-$CACHE/venv/bin/python}
TARGET=${MSPROBE_MS_TARGET:-$CACHE/msprobe-26.2.0}
WHEEL_DIR=${MSPROBE_WHEEL_DIR:-$CACHE/wheels}
OUT=$ROOT/tests/fixtures/zoo/mindspore
# shellcheck source=zoo/make/msprobe_target.sh
. "$HERE/msprobe_target.sh"

"$PY" - <<'PY'
import numpy, mindspore
assert numpy.__version__.startswith("1."), f"numpy {numpy.__version__}: MindSpore 2.10 needs numpy 1.x"
assert mindspore.__version__.startswith("2.10"), f"mindspore {mindspore.__version__}, expected 2.10"
PY

ensure_msprobe_26 "$PY" "$TARGET" "$WHEEL_DIR"

if [ $# -gt 0 ]; then
    MODELS=("$@")
else
    MODELS=()
    for f in "$HERE"/mindspore/ms_*.py; do MODELS+=("$(basename "$f" .py)"); done
fi

WORK=$(mktemp -d /tmp/zoo-ms-make.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

for model in "${MODELS[@]}"; do
    for task in statistics tensor; do
        run=$WORK/$model-$task
        mkdir -p "$run"
        # dump_path in the configs is relative: the dump lands in $run
        if ! (cd "$run" && PYTHONPATH="$TARGET:$HERE/mindspore" "$PY" "$HERE/mindspore/$model.py" \
                "$HERE/configs/ms_${task}_L1.json" >"$run/log" 2>&1); then
            grep -v '^\[WARNING\]' "$run/log" | tail -n 30 >&2
            echo "$model ($task) failed" >&2
            exit 1
        fi
        src=$(ls -d "$run"/dump_${task}_L1/step0/proc*)
        dst=$OUT/$model/$task
        rm -rf "$dst"
        mkdir -p "$dst"
        cp "$src/dump.json" "$dst/"
        if [ "$task" = tensor ]; then
            cp -r "$src/dump_tensor_data" "$dst/"
        fi
        grep -h "step 0 loss" "$run/log" | sed "s/^/  [$task] /"
        size=$(du -sk --apparent-size "$dst" | cut -f1)
        if [ "$size" -gt 2048 ]; then
            echo "WARNING: $dst is ${size} KB (keep each tensor dump under ~2 MB)" >&2
        fi
    done
done

"$PY" "$HERE/mindspore/summarize_dump.py" "$OUT"/*/statistics "$OUT"/*/tensor
du -sh --apparent-size "$OUT" "$OUT"/*/*
