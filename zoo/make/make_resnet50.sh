#!/usr/bin/env bash
# Make the ResNet-50 training-step dumps of the real-size benchmark (scripts/bench-real-size.sh)
# with the real msprobe 26.2.0: statistics at level mix and tensor at level L1, float32, forward and
# backward (zoo/make/bench/resnet50_step.py). Not committed: they land in a cache folder outside the
# repository, and are made only when missing.
#
#   zoo/make/make_resnet50.sh [DEST]     DEST [$HOME/.cache/msprobe-rs/bench]/resnet50_{statistics,tensor}
#
# BATCH (default 8) is the batch at 224x224; TASKS (default "statistics tensor") the dumps made. A
# dump folder that already holds a dump.json is left as it is; remove it to make it again.
#   MSPROBE_RS_VENV     [$HOME/.cache/msprobe-rs/venv]: torch, numpy
#   MSPROBE_MS_TARGET   [$HOME/.cache/msprobe-rs/msprobe-26.2.0]: msprobe 26.2.0 (msprobe_target.sh)
#   MSPROBE_26_PT_EXTRA [$HOME/.cache/msprobe-rs/msprobe-26.2.0-pytorch]: what its msprobe.pytorch
#                       imports beyond the MindSpore half
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=$HOME/.cache/msprobe-rs
PY=${MSPROBE_RS_VENV:-$CACHE/venv}/bin/python
TARGET_26=${MSPROBE_MS_TARGET:-$CACHE/msprobe-26.2.0}
EXTRA_26=${MSPROBE_26_PT_EXTRA:-$CACHE/msprobe-26.2.0-pytorch}
DEST=${1:-$CACHE/bench}
BATCH=${BATCH:-8}
export PYTHONDONTWRITEBYTECODE=1

[ -x "$PY" ] || { echo "no python at $PY (set MSPROBE_RS_VENV)" >&2; exit 1; }
# shellcheck source=zoo/make/msprobe_target.sh
. "$HERE/msprobe_target.sh"
ensure_msprobe_26 "$PY" "$TARGET_26" "$CACHE/wheels"
if ! PYTHONPATH=$TARGET_26:$EXTRA_26 "$PY" -c 'from msprobe.pytorch import PrecisionDebugger' >/dev/null 2>&1; then
    "$PY" -m pip install -q --upgrade --target "$EXTRA_26" --no-deps "${MSPROBE_26_PT_EXTRAS[@]}"
fi

for task in ${TASKS:-statistics tensor}; do
    case $task in
        statistics) config=$HERE/levelmix/config_statistics_mix.json ;;
        tensor) config=$HERE/configs/pt_config_tensor_L1.json ;;
        *) echo "TASKS: statistics or tensor, got $task" >&2; exit 1 ;;
    esac
    out=$DEST/resnet50_$task
    if [ -f "$out/dump.json" ]; then
        echo "$out/dump.json exists (remove $out to make it again)"
        continue
    fi
    mkdir -p "$DEST"
    work=$(mktemp -d "$DEST/.resnet50.XXXXXX")
    echo "== resnet50 step, batch $BATCH, $task -> $out"
    if ! (cd "$work" && PYTHONPATH=$TARGET_26:$EXTRA_26 "$PY" "$HERE/bench/resnet50_step.py" "$config" "$work/out" "$BATCH") > "$work/log" 2>&1; then
        grep -v '^\[WARNING\]' "$work/log" | tail -n 30 >&2
        rm -rf "$work"
        exit 1
    fi
    grep "loss" "$work/log" | tail -1
    src=$(dirname "$(find "$work/out" -name dump.json | head -n 1)")
    [ -f "$src/dump.json" ] || { echo "no dump.json made" >&2; rm -rf "$work"; exit 1; }
    mkdir -p "$work/dump"
    mv "$src/dump.json" "$work/dump/"
    [ -d "$src/dump_tensor_data" ] && mv "$src/dump_tensor_data" "$work/dump/"
    mv "$work/dump" "$out"
    rm -rf "$work"
    echo "$(du -sh "$out" | cut -f1) in $out"
done
