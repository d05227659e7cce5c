#!/usr/bin/env bash
# Make tests/fixtures/ms_fused/: a tensor dump (task tensor, level L1, one step) of MindSpore's
# fused ops of mindspore.ops (Functional.rms_norm, fast_gelu, rotary_position_embedding,
# flash_attention_score: forward and backward entries), recorded by the real msprobe 26.2.0
# (PyPI mindstudio-probe) on MindSpore 2.10 CPU, PyNative, from zoo/make/ms_fused/ms_fused_model.py
# with the config zoo/make/ms_fused/ms_fused_tensor_L1.json; and a copy with planted errors.
#
#   zoo/make/ms_fused/make_ms_fused_dumps.sh
#
# - clean/: dump.json, construct.json and dump_tensor_data/*.npy as msprobe wrote them, and
#   stack.json with this machine's home folder written `~/` and the repository `<repo>/`.
# - planted/: clean/ with one recorded output or gradient file changed per call, and
#   planted.json naming them (ms_fused_model.py --plant; dump.json keeps the clean statistics).
#
# MindSpore 2.10's CPU build has no kernel for RmsNorm, RotaryPositionEmbedding or
# FlashAttentionScore (Ascend-only): ms_fused_model.py then runs float32 compositions of CPU
# kernels under those names, which msprobe records as it would the ops (see its docstring and
# tests/fixtures/ms_fused/README.md). fast_gelu runs MindSpore's CPU kernel.
#
# Environment (defaults in brackets):
#   MSPROBE_RS_CACHE   [$HOME/.cache/msprobe-rs]
#   PYTHON             [$MSPROBE_RS_CACHE/venv/bin/python]: mindspore 2.10 (CPU) with numpy 1.x
#                      (scripts/setup-python-env.sh makes it)
#   MSPROBE_MS_TARGET  [$MSPROBE_RS_CACHE/msprobe-26.2.0]: msprobe 26.2.0 installed with pip
#                      --target (zoo/make/msprobe_target.sh), on PYTHONPATH only while the model runs
#   MSPROBE_WHEEL_DIR  [$MSPROBE_RS_CACHE/wheels]: a folder holding the mindstudio-probe wheel, used
#                      first when present (pip --find-links); PyPI otherwise
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
OUT=$ROOT/tests/fixtures/ms_fused
# shellcheck source=zoo/make/msprobe_target.sh
. "$ROOT/zoo/make/msprobe_target.sh"
ms_make_env

"$PY" - <<'PY'
import numpy, mindspore
assert numpy.__version__.startswith("1."), f"numpy {numpy.__version__}: MindSpore 2.10 needs numpy 1.x"
assert mindspore.__version__.startswith("2.10"), f"mindspore {mindspore.__version__}, expected 2.10"
PY

ensure_msprobe_26 "$PY" "$TARGET" "$WHEEL_DIR"
rm -rf "$OUT/planted"
ms_tensor_fixture "$HERE/ms_fused_model.py" "$HERE/ms_fused_tensor_L1.json" "$OUT/clean" "$ROOT"

"$PY" "$HERE/ms_fused_model.py" --plant "$OUT/clean" "$OUT/planted" 2>&1 | grep -v '^\[WARNING\]'

size=$(du -sk --apparent-size "$OUT/clean" "$OUT/planted" | awk '{s += $1} END {print s}')
if [ "$size" -gt 2048 ]; then
    echo "WARNING: $OUT/clean and planted are ${size} KB (keep them under 2 MB)" >&2
fi
echo "wrote $OUT/clean and $OUT/planted (${size} KB)"
