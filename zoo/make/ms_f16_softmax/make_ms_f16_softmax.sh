#!/usr/bin/env bash
# Make tests/fixtures/ms_f16_softmax/: a tensor dump (task tensor, level L1, one step) of one
# float16 softmax, forward and backward, recorded by the real msprobe 26.2.0 (PyPI
# mindstudio-probe) on MindSpore 2.10 CPU, PyNative, from
# zoo/make/ms_f16_softmax/ms_f16_softmax_model.py with ms_f16_softmax_tensor_L1.json.
#
#   zoo/make/ms_f16_softmax/make_ms_f16_softmax.sh
#
# Environment: zoo/make/msprobe_target.sh's ms_make_env (MSPROBE_RS_CACHE, PYTHON,
# MSPROBE_MS_TARGET, MSPROBE_WHEEL_DIR).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
# shellcheck source=zoo/make/msprobe_target.sh
. "$ROOT/zoo/make/msprobe_target.sh"
ms_make_env
ensure_msprobe_26 "$PY" "$TARGET" "$WHEEL_DIR"
OUT=$ROOT/tests/fixtures/ms_f16_softmax
ms_tensor_fixture "$HERE/ms_f16_softmax_model.py" "$HERE/ms_f16_softmax_tensor_L1.json" "$OUT" "$ROOT"
echo "wrote $OUT ($(du -sk --apparent-size "$OUT" | cut -f1) KB)"
