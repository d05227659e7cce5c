#!/usr/bin/env bash
# Make the fixtures of issue 21 (tests/fixtures/rounding/, tests/rounding.rs): real msprobe dumps
# of calls whose correct results a rounding-blind standard takes for errors, and of the calls of
# the planted errors.
#
#   zoo/make/make_rounding.sh
#
# - sgd_weight_decay, autocast_residual (zoo/make/rounding/*.py, PyTorch): dumped by msprobe 8.3.2
#   and 26.2.0, task statistics and task tensor, level L1 -> <case>/<version>/<task>/;
# - linear_bias_cancel (PyTorch): the same, task tensor only;
# - ms_gelu_grad (MindSpore 2.10 CPU): msprobe 26.2.0, both tasks -> ms_gelu_grad/26.2.0/<task>/;
# - planted (PyTorch, msprobe 8.3.2, task tensor): the correct calls -> planted/correct/, and
#   plant.py's copy with each output replaced by a wrong kernel's result -> planted/wrong/.
# Only dump.json and dump_tensor_data/ are copied (msprobe's output otherwise unedited).
#
# Environment (defaults in brackets):
#   MSPROBE_RS_CACHE   [$HOME/.cache/msprobe-rs]
#   PYTHON             [$MSPROBE_RS_CACHE/venv/bin/python]: torch 2.15, mindspore 2.10, numpy 1.x
#   MSPROBE_PT_TARGET  [$MSPROBE_RS_CACHE/msprobe-8.3.2]: msprobe 8.3.2 (make_pytorch.sh installs it)
#   MSPROBE_MS_TARGET  [$MSPROBE_RS_CACHE/msprobe-26.2.0]: msprobe 26.2.0 (msprobe_target.sh installs
#                      it); its `msprobe.pytorch` also needs einops and tensorboard, which the
#                      MindSpore set of dependencies lacks: they are added there (pip --target --no-deps)
#   MSPROBE_WHEEL_DIR  [$MSPROBE_RS_CACHE/wheels]
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${MSPROBE_RS_CACHE:-$HOME/.cache/msprobe-rs}
PY=${PYTHON:-$CACHE/venv/bin/python}
TARGET_832=${MSPROBE_PT_TARGET:-$CACHE/msprobe-8.3.2}
TARGET_26=${MSPROBE_MS_TARGET:-$CACHE/msprobe-26.2.0}
WHEEL_DIR=${MSPROBE_WHEEL_DIR:-$CACHE/wheels}
OUT=$ROOT/tests/fixtures/rounding
export PYTHONDONTWRITEBYTECODE=1
# shellcheck source=zoo/make/msprobe_target.sh
. "$HERE/msprobe_target.sh"

# What msprobe 26.2.0's msprobe.pytorch imports beyond MSPROBE_26_DEPS: MSPROBE_26_PT_EXTRAS (msprobe_target.sh).

pt_imports() {  # TARGET VERSION
    PYTHONPATH=$1 "$PY" -c "
import importlib.metadata as m
assert m.version('mindstudio-probe') == '$2', m.version('mindstudio-probe')
from msprobe.pytorch import PrecisionDebugger" >/dev/null 2>&1
}

pt_imports "$TARGET_832" 8.3.2 || { echo "no msprobe 8.3.2 in $TARGET_832 (zoo/make/make_pytorch.sh installs it)" >&2; exit 1; }
ensure_msprobe_26 "$PY" "$TARGET_26" "$WHEEL_DIR"
if ! pt_imports "$TARGET_26" 26.2.0; then
    echo "adding ${MSPROBE_26_PT_EXTRAS[*]} to $TARGET_26 (msprobe.pytorch needs them)"
    "$PY" -m pip install -q --target "$TARGET_26" --no-deps "${MSPROBE_26_PT_EXTRAS[@]}"
    pt_imports "$TARGET_26" 26.2.0 || { PYTHONPATH=$TARGET_26 "$PY" -c 'from msprobe.pytorch import PrecisionDebugger'; exit 1; }
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/msprobe-rounding.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

copy_dump() {  # SRC_FOLDER DEST TASK
    rm -rf "${2:?}"
    mkdir -p "$2"
    cp "$1/dump.json" "$2/"
    if [ "$3" = tensor ]; then cp -r "$1/dump_tensor_data" "$2/"; fi
}

pytorch_case() {  # CASE VERSION TARGET TASK...
    local case=$1 version=$2 target=$3 task out
    shift 3
    for task in "$@"; do
        echo "== $case (msprobe $version, $task)"
        out=$WORK/$case-$version-$task
        (cd "$WORK" && PYTHONPATH="$target:$HERE/pytorch" "$PY" "$HERE/rounding/$case.py" \
            "$HERE/configs/pt_config_${task}_L1.json" "$out") >"$out.log" 2>&1 || { tail -n 30 "$out.log" >&2; exit 1; }
        grep -v '^\S* \S* (\|^\[' "$out.log" | tail -n 1
        copy_dump "$(dirname "$(find "$out" -name dump.json | head -n 1)")" "$OUT/$case/$version/$task" "$task"
    done
}

for version in 8.3.2 26.2.0; do
    target=$TARGET_832
    [ "$version" = 26.2.0 ] && target=$TARGET_26
    pytorch_case sgd_weight_decay "$version" "$target" statistics tensor
    pytorch_case autocast_residual "$version" "$target" statistics tensor
    pytorch_case linear_bias_cancel "$version" "$target" tensor
done

for task in statistics tensor; do
    echo "== ms_gelu_grad (msprobe 26.2.0, $task)"
    run=$WORK/ms_gelu_grad-$task
    mkdir -p "$run"
    (cd "$run" && PYTHONPATH="$TARGET_26:$HERE/mindspore" "$PY" "$HERE/rounding/ms_gelu_grad.py" \
        "$HERE/configs/ms_${task}_L1.json") >"$run.log" 2>&1 || { grep -v '^\[WARNING\]' "$run.log" | tail -n 30 >&2; exit 1; }
    grep -h "step 0 loss" "$run.log"
    copy_dump "$(ls -d "$run"/dump_${task}_L1/step0/proc*)" "$OUT/ms_gelu_grad/26.2.0/$task" "$task"
done

echo "== planted (msprobe 8.3.2, tensor)"
out=$WORK/planted
(cd "$WORK" && PYTHONPATH="$TARGET_832:$HERE/pytorch" "$PY" "$HERE/rounding/planted.py" \
    "$HERE/configs/pt_config_tensor_L1.json" "$out") >"$out.log" 2>&1 || { tail -n 30 "$out.log" >&2; exit 1; }
copy_dump "$out/step0/rank" "$OUT/planted/correct" tensor
"$PY" "$HERE/rounding/plant.py" "$out/step0/rank" "$WORK/planted-wrong"
copy_dump "$WORK/planted-wrong" "$OUT/planted/wrong" tensor

du -sh --apparent-size "$OUT" "$OUT"/*/*
