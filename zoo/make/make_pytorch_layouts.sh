#!/usr/bin/env bash
# Make the gradient-layout fixtures (tests/fixtures/layouts/<version>/): zoo/make/pytorch_layouts/
# layouts.py (F.linear and torch.matmul in the layouts msprobe records their input gradients in)
# dumped by the real msprobe 8.3.2 and 26.2.0 (PyPI mindstudio-probe, PyTorch), task tensor,
# level L1, with the project venv's torch. dump.json and dump_tensor_data/ are copied unedited.
#
#   zoo/make/make_pytorch_layouts.sh
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
export PYTHONDONTWRITEBYTECODE=1

# shellcheck source=zoo/make/msprobe_target.sh
. "$HERE/msprobe_target.sh"
ensure_msprobe_26 "$PY" "$TARGET_26" "$CACHE/wheels"
pt_imports() {  # PYTHONPATH VERSION
    PYTHONPATH=$1 "$PY" -c "
import importlib.metadata as m
assert m.version('mindstudio-probe') == '$2', m.version('mindstudio-probe')
from msprobe.pytorch import PrecisionDebugger" >/dev/null 2>&1
}
pt_imports "$TARGET_832" 8.3.2 || { echo "no msprobe 8.3.2 in $TARGET_832 (zoo/make/make_pytorch.sh installs it)" >&2; exit 1; }
if ! pt_imports "$TARGET_26:$EXTRA_26" 26.2.0; then
    echo "installing what msprobe 26.2.0's msprobe.pytorch imports into $EXTRA_26"
    "$PY" -m pip install -q --no-deps --target "$EXTRA_26" einops==0.8.2 tensorboard==2.21.0 absl-py==2.5.1
    pt_imports "$TARGET_26:$EXTRA_26" 26.2.0 || { PYTHONPATH=$TARGET_26:$EXTRA_26 "$PY" -c 'from msprobe.pytorch import PrecisionDebugger'; exit 1; }
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/msprobe-layouts.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
for version in 8.3.2 26.2.0; do
    case $version in
        8.3.2) path=$TARGET_832 ;;
        26.2.0) path=$TARGET_26:$EXTRA_26 ;;
    esac
    echo "== msprobe $version"
    out=$WORK/$version
    (cd "$WORK" && PYTHONPATH=$path "$PY" "$HERE/pytorch_layouts/layouts.py" "$HERE/configs/pt_config_tensor_L1.json" "$out") \
        > "$WORK/$version.log" 2>&1 || { cat "$WORK/$version.log" >&2; exit 1; }
    grep -E "Backward|loss" "$WORK/$version.log"
    src=$(dirname "$(find "$out" -name dump.json | head -1)")
    [ -f "$src/dump.json" ] || { echo "no dump.json for $version" >&2; cat "$WORK/$version.log" >&2; exit 1; }
    dest=$ROOT/tests/fixtures/layouts/$version/tensor
    rm -rf "$dest"
    mkdir -p "$dest"
    cp "$src/dump.json" "$dest/"
    cp -r "$src/dump_tensor_data" "$dest/"
done
