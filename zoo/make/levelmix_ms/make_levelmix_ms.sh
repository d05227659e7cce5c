#!/usr/bin/env bash
# Make the MindSpore level-mix fixtures (tests/fixtures/levelmix_ms/26.2.0/ms_small_net/<task>/):
# one seeded training step of zoo/make/levelmix_ms/ms_small_net.py (a small mindspore.nn.Cell:
# nn.Dense, relu, matmul, softmax, residual add, log_softmax, NLL loss, value_and_grad, nn.SGD),
# dumped on the CPU (MindSpore 2.10, PyNative) by the real msprobe 26.2.0 (PyPI mindstudio-probe)
# at level "mix" (Cell + API hooks) with task statistics and task tensor
# (zoo/make/levelmix_ms/config_{statistics,tensor}_mix.json). dump.json, stack.json,
# construct.json (and, for task tensor, dump_tensor_data/) are copied from the one step0/<rank or
# proc> folder msprobe writes; stack.json's frames have this checkout written <repo>/ and the home
# folder ~/ (the only edit). describe.py then prints the entry kinds and their keys.
#
#   zoo/make/levelmix_ms/make_levelmix_ms.sh
#
# Environment (defaults in brackets):
#   MSPROBE_RS_CACHE   [$HOME/.cache/msprobe-rs]
#   PYTHON             [$MSPROBE_RS_CACHE/venv/bin/python]: mindspore 2.10 with numpy 1.x
#   MSPROBE_MS_TARGET  [$MSPROBE_RS_CACHE/msprobe-26.2.0]: msprobe 26.2.0 (on PYTHONPATH only
#                      while the model runs; ../msprobe_target.sh installs it when missing)
#   MSPROBE_WHEEL_DIR  [$MSPROBE_RS_CACHE/wheels]
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
CACHE=${MSPROBE_RS_CACHE:-$HOME/.cache/msprobe-rs}
PY=${PYTHON:-$CACHE/venv/bin/python}
TARGET=${MSPROBE_MS_TARGET:-$CACHE/msprobe-26.2.0}
WHEEL_DIR=${MSPROBE_WHEEL_DIR:-$CACHE/wheels}
VERSION=26.2.0
MODEL=ms_small_net
DEST=$ROOT/tests/fixtures/levelmix_ms/$VERSION/$MODEL
export PYTHONDONTWRITEBYTECODE=1

[ -x "$PY" ] || { echo "no python at $PY (set PYTHON)" >&2; exit 1; }
"$PY" - <<'PY'
import numpy, mindspore
assert numpy.__version__.startswith("1."), f"numpy {numpy.__version__}: MindSpore 2.10 needs numpy 1.x"
assert mindspore.__version__.startswith("2.10"), f"mindspore {mindspore.__version__}, expected 2.10"
print("mindspore", mindspore.__version__, "| numpy", numpy.__version__)
PY
# shellcheck source=zoo/make/msprobe_target.sh
. "$HERE/../msprobe_target.sh"
ensure_msprobe_26 "$PY" "$TARGET" "$WHEEL_DIR"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/msprobe-levelmix-ms.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
for task in statistics tensor; do
    echo "== msprobe $VERSION: $MODEL ($task)"
    log=$WORK/$task.log
    # dump_path in the configs is relative (./dumps/<task>): the dump lands in $WORK/dumps/<task>
    (cd "$WORK" && PYTHONPATH=$TARGET "$PY" "$HERE/$MODEL.py" "$HERE/config_${task}_mix.json") \
        > "$log" 2>&1 || { grep -v '^\[WARNING\]' "$log" | tail -n 30 >&2; echo "$task failed" >&2; exit 1; }
    grep "step 0 loss" "$log"
    srcs=("$WORK/dumps/$task"/step0/*/dump.json)
    [ ${#srcs[@]} -eq 1 ] && [ -f "${srcs[0]}" ] ||
        { echo "want one dump.json under $WORK/dumps/$task/step0/*/, found: ${srcs[*]}" >&2; exit 1; }
    src=$(dirname "${srcs[0]}")
    echo "   msprobe wrote step0/$(basename "$src")/"
    dest=$DEST/$task
    rm -rf "$dest"
    mkdir -p "$dest"
    cp "$src/dump.json" "$src/stack.json" "$src/construct.json" "$dest/"
    sed -i -e "s#$ROOT/#<repo>/#g" -e "s#$HOME/#~/#g" "$dest/stack.json"
    if [ "$task" = tensor ]; then
        cp -r "$src/dump_tensor_data" "$dest/"
    fi
done

du -sh --apparent-size "$DEST" "$DEST"/*
size=$(du -sk --apparent-size "$DEST" | cut -f1)
[ "$size" -le 1024 ] || echo "WARNING: $DEST is ${size} KB (keep it under 1 MB)" >&2
"$PY" "$HERE/describe.py" "$DEST"
