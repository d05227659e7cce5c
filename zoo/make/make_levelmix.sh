#!/usr/bin/env bash
# Make the level-mix fixtures (tests/fixtures/levelmix/<version>/<model>/<task>/): two small
# nn.Modules, zoo/make/levelmix/small_cnn.py (conv2d, batch_norm, relu, max_pool, conv2d, adaptive
# avg pool, flatten, linear, cross_entropy, SGD) and zoo/make/levelmix/small_transformer.py
# (embedding, layer_norm, q/k/v linear, causal matmul attention, softmax, dropout p=0, residual
# adds, gelu MLP, cross_entropy, SGD), one undumped warm-up step then one dumped training step
# each, dumped on the CPU by the real msprobe 8.3.2 and 26.2.0 (PyPI mindstudio-probe, PyTorch) at
# level "mix" (module + API hooks) with task statistics and task tensor
# (zoo/make/levelmix/config_{statistics,tensor}_mix.json), with the project venv's torch.
# dump.json, stack.json, construct.json (and, for task tensor, dump_tensor_data/) are copied
# unedited from the folder msprobe wrote them in (step0/rank/ for 8.3.2, step0/proc<PID>/ for
# 26.2.0); zoo/make/levelmix/describe.py then prints the entry kinds and keys they hold.
#
#   zoo/make/make_levelmix.sh
#
# Environment (defaults in brackets):
#   MSPROBE_RS_VENV     [$HOME/.cache/msprobe-rs/venv]: torch, numpy
#   MSPROBE_PT_TARGET   [$HOME/.cache/msprobe-rs/msprobe-8.3.2]: msprobe 8.3.2 (make_pytorch.sh installs it)
#   MSPROBE_MS_TARGET   [$HOME/.cache/msprobe-rs/msprobe-26.2.0]: msprobe 26.2.0 (msprobe_target.sh installs it)
#   MSPROBE_26_PT_EXTRA [$HOME/.cache/msprobe-rs/msprobe-26.2.0-pytorch]: what msprobe 26.2.0's
#                       `msprobe.pytorch` imports beyond the MindSpore half (einops, tensorboard,
#                       absl-py), installed here with pip --target --no-deps when missing
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=$HOME/.cache/msprobe-rs
PY=${MSPROBE_RS_VENV:-$CACHE/venv}/bin/python
TARGET_832=${MSPROBE_PT_TARGET:-$CACHE/msprobe-8.3.2}
TARGET_26=${MSPROBE_MS_TARGET:-$CACHE/msprobe-26.2.0}
EXTRA_26=${MSPROBE_26_PT_EXTRA:-$CACHE/msprobe-26.2.0-pytorch}
MIX=$HERE/levelmix
DEST=$ROOT/tests/fixtures/levelmix
export PYTHONDONTWRITEBYTECODE=1

[ -x "$PY" ] || { echo "no python at $PY (set MSPROBE_RS_VENV)" >&2; exit 1; }
"$PY" -c 'import torch, numpy' || { echo "$PY lacks torch/numpy" >&2; exit 1; }

# shellcheck source=zoo/make/msprobe_target.sh
. "$HERE/msprobe_target.sh"
ensure_msprobe_26 "$PY" "$TARGET_26" "$CACHE/wheels"
pt_imports() {  # PYTHONPATH VERSION
    PYTHONPATH=$1 "$PY" -c "
import importlib.metadata as m
assert m.version('mindstudio-probe') == '$2', m.version('mindstudio-probe')
from msprobe.pytorch import PrecisionDebugger, seed_all" >/dev/null 2>&1
}
pt_imports "$TARGET_832" 8.3.2 || { echo "no msprobe 8.3.2 in $TARGET_832 (zoo/make/make_pytorch.sh installs it)" >&2; exit 1; }
if ! pt_imports "$TARGET_26:$EXTRA_26" 26.2.0; then
    echo "installing what msprobe 26.2.0's msprobe.pytorch imports into $EXTRA_26"
    "$PY" -m pip install -q --no-deps --target "$EXTRA_26" "${MSPROBE_26_PT_EXTRAS[@]}"
    pt_imports "$TARGET_26:$EXTRA_26" 26.2.0 || { PYTHONPATH=$TARGET_26:$EXTRA_26 "$PY" -c 'from msprobe.pytorch import PrecisionDebugger'; exit 1; }
fi
"$PY" -c 'import torch, numpy; print("torch", torch.__version__, "| numpy", numpy.__version__)'

WORK=$(mktemp -d "${TMPDIR:-/tmp}/msprobe-levelmix.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
for version in 8.3.2 26.2.0; do
    case $version in
        8.3.2) path=$TARGET_832 ;;
        26.2.0) path=$TARGET_26:$EXTRA_26 ;;
    esac
    for model in small_cnn small_transformer; do
        for task in statistics tensor; do
            echo "== msprobe $version: $model ($task)"
            out=$WORK/$version/$model/$task
            log=$WORK/$version.$model.$task.log
            (cd "$WORK" && PYTHONPATH=$path "$PY" "$MIX/$model.py" "$MIX/config_${task}_mix.json" "$out") \
                > "$log" 2>&1 || { cat "$log" >&2; exit 1; }
            grep "loss" "$log" | tail -1
            # step0/rank/ (8.3.2) or step0/proc<PID>/ (26.x without torch.distributed): one folder.
            srcs=("$out"/step0/*/dump.json)
            [ ${#srcs[@]} -eq 1 ] && [ -f "${srcs[0]}" ] ||
                { echo "want one dump.json under $out/step0/*/, found: ${srcs[*]}" >&2; cat "$log" >&2; exit 1; }
            src=$(dirname "${srcs[0]}")
            echo "   msprobe wrote $(basename "$src")/"
            dest=$DEST/$version/$model/$task
            rm -rf "$dest"
            mkdir -p "$dest"
            cp "$src/dump.json" "$src/stack.json" "$src/construct.json" "$dest/"
            # No path of the making machine in the repository: its home and this checkout are
            # written as ~ and <repo> in the frames of stack.json (the only edit).
            sed -i -e "s#$ROOT/#<repo>/#g" -e "s#$HOME/#~/#g" "$dest/stack.json"
            if [ "$task" = tensor ]; then
                cp -r "$src/dump_tensor_data" "$dest/"
            fi
        done
    done
done

du -sh "$DEST"
"$PY" "$MIX/describe.py" "$DEST"
