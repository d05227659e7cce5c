#!/usr/bin/env bash
# Make the MSAdapter (mindtorch) fixtures: one training step of each model in
# zoo/make/mindtorch/mt_*.py (MSAdapter's torch API on MindSpore, PyNative, CPU; gradients through
# mindspore.value_and_grad), dumped by the real msprobe 8.3.2 and 26.2.0 (PyPI mindstudio-probe),
# task statistics and task tensor at level L1. Each dump's dump.json, stack.json, construct.json
# (and dump_tensor_data/ for tensor) are copied to tests/fixtures/mindtorch/<model>/<version>/<task>/,
# with stack.json's file names made relative (see relative_stacks); then each tensor dump's forward
# calls are replayed with the real torch and compared (zoo/make/mindtorch/check_forward.py).
#
#   zoo/make/make_mindtorch.sh [model ...]      (default: every zoo/make/mindtorch/mt_*.py)
#
# Environment (defaults in brackets):
#   MSPROBE_RS_CACHE   [$HOME/.cache/msprobe-rs]
#   PYTHON             [made by scripts/setup-mindtorch-env.sh]: mindspore-dev 2.6.0.dev20250323,
#                      mindtorch 0.4.0, numpy 1.26.4, with the environment's run-time patches
#   MSPROBE_832        [$MSPROBE_RS_CACHE/msprobe-8.3.2]: msprobe 8.3.2 in a folder of its own,
#                      as scripts/setup-python-env.sh installs it (pip --target --no-deps)
#   MSPROBE_MS_TARGET  [$MSPROBE_RS_CACHE/msprobe-26.2.0]: msprobe 26.2.0 likewise (msprobe_target.sh)
#   MSPROBE_WHEEL_DIR  [$MSPROBE_RS_CACHE/wheels]: a folder holding the mindstudio-probe wheel, used first when present
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${MSPROBE_RS_CACHE:-$HOME/.cache/msprobe-rs}
PY=${PYTHON:-$("$ROOT/scripts/setup-mindtorch-env.sh" | tail -n 1)}
TARGET_832=${MSPROBE_832:-$CACHE/msprobe-8.3.2}
TARGET_26=${MSPROBE_MS_TARGET:-$CACHE/msprobe-26.2.0}
WHEEL_DIR=${MSPROBE_WHEEL_DIR:-$CACHE/wheels}
OUT=$ROOT/tests/fixtures/mindtorch

# shellcheck source=zoo/make/msprobe_target.sh
. "$HERE/msprobe_target.sh"
msprobe_imports "$PY" "$TARGET_832" 8.3.2 ||
    { echo "no msprobe 8.3.2 in $TARGET_832 (scripts/setup-python-env.sh installs it)" >&2; exit 1; }
ensure_msprobe_26 "$PY" "$TARGET_26" "$WHEEL_DIR"

if [ $# -gt 0 ]; then
    MODELS=("$@")
else
    MODELS=()
    for f in "$HERE"/mindtorch/mt_*.py; do MODELS+=("$(basename "$f" .py)"); done
fi

# stack.json names the files of this machine: the clone's become relative to it, the MSAdapter
# venv's and the cache's start with <venv>/ and <cache>/ (nothing else in the dumps is changed)
VENV_DIR=$("$PY" -c 'import sys; print(sys.prefix)')
relative_stacks() {
    "$PY" - "$1" "$VENV_DIR/:<venv>/" "$CACHE/:<cache>/" "$ROOT/:" <<'PY'
import sys
path, text = sys.argv[1], open(sys.argv[1], encoding="utf-8").read()
for pair in sys.argv[2:]:
    prefix, placeholder = pair.rsplit(":", 1)
    text = text.replace(prefix, placeholder)
open(path, "w", encoding="utf-8").write(text)
PY
}

WORK=$(mktemp -d /tmp/zoo-mt-make.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

for model in "${MODELS[@]}"; do
    for version in 8.3.2 26.2.0; do
        target=$TARGET_832
        [ "$version" = 26.2.0 ] && target=$TARGET_26
        for task in statistics tensor; do
            run=$WORK/$model-$version-$task
            mkdir -p "$run"
            # dump_path in the configs is relative: the dump lands in $run
            if ! (cd "$run" && PYTHONPATH="$target:$HERE/mindtorch/stubs:$HERE/mindtorch" \
                    "$PY" "$HERE/mindtorch/$model.py" "$HERE/configs/ms_${task}_L1.json" >"$run/log" 2>&1); then
                grep -v '^\[WARNING\]' "$run/log" | tail -n 30 >&2
                echo "$model (msprobe $version, $task) failed" >&2
                exit 1
            fi
            # the rank folder: rank (8.3.2), proc<PID> (26.2.0)
            src=$(ls -d "$run"/dump_${task}_L1/step0/*/)
            dst=$OUT/${model#mt_}/$version/$task
            rm -rf "$dst"
            mkdir -p "$dst"
            for f in dump.json stack.json construct.json; do
                [ -f "$src/$f" ] && cp "$src/$f" "$dst/"
            done
            if [ "$task" = tensor ]; then
                cp -r "$src/dump_tensor_data" "$dst/"
            fi
            relative_stacks "$dst/stack.json"
            grep -h "step 0 loss" "$run/log" | sed "s/^/  [$model $version $task] /"
            size=$(du -sk --apparent-size "$dst" | cut -f1)
            if [ "$size" -gt 300 ]; then
                echo "WARNING: $dst is ${size} KB (keep each dump under ~300 KB)" >&2
            fi
        done
    done
done

# every recorded forward output against the real torch on the recorded inputs (check_forward.py)
"$PY" "$HERE/mindtorch/check_forward.py" "$OUT"/*/*/tensor
du -sh --apparent-size "$OUT"/*/*/*
