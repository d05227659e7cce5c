#!/usr/bin/env bash
# Make tests/fixtures/forms/<version>/: one dumped step of the call forms issue 38 names
# (zoo/make/forms/forms_step.py: Tensor.type_as float32 -> bfloat16, torch.maximum(out=),
# nn.LSTM and nn.GRU, a complex64 multiply, a differentiated index_add_, two nn.MultiheadAttention
# calls), dumped on the CPU by the real msprobe 8.3.2 and
# 26.2.0 (PyPI mindstudio-probe, PyTorch), task tensor, level L1
# (zoo/make/configs/pt_config_tensor_L1.json), with the project venv's torch. dump.json and
# dump_tensor_data/ are copied unedited from the folder msprobe wrote them in. What each version
# records: 8.3.2 `Tensor.type_as`, `VF.lstm` (nn.GRU is not hooked), `Torch.maximum` with its
# `out` keyword, the complex `Tensor.__mul__`, `Tensor.index_add_` forward and backward,
# `Functional.multi_head_attention_forward` forward and backward; 26.2.0
# all but `type_as` and `VF.lstm`.
#
#   zoo/make/make_forms.sh [forms|complex_calls]
#
# `complex_calls` makes tests/fixtures/complex_calls/<version>/ the same way from
# zoo/make/complex/complex_step.py: one step of complex64 arithmetic (polar, complex division,
# a complex matmul, abs, angle, torch.complex, a complex times a real tensor, view_as_real).
#
# Environment as zoo/make/make_levelmix.sh's.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=$HOME/.cache/msprobe-rs
PY=${MSPROBE_RS_VENV:-$CACHE/venv}/bin/python
TARGET_832=${MSPROBE_PT_TARGET:-$CACHE/msprobe-8.3.2}
TARGET_26=${MSPROBE_MS_TARGET:-$CACHE/msprobe-26.2.0}
EXTRA_26=${MSPROBE_26_PT_EXTRA:-$CACHE/msprobe-26.2.0-pytorch}
NAME=${1:-forms}
case $NAME in
    forms) STEP=$HERE/forms/forms_step.py ;;
    complex_calls) STEP=$HERE/complex/complex_step.py ;;
    *) echo "usage: $0 [forms|complex_calls]" >&2; exit 2 ;;
esac
DEST=$ROOT/tests/fixtures/$NAME
export PYTHONDONTWRITEBYTECODE=1

WORK=$(mktemp -d "${TMPDIR:-/tmp}/msprobe-forms.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
for version in 8.3.2 26.2.0; do
    case $version in
        8.3.2) path=$TARGET_832 ;;
        26.2.0) path=$TARGET_26:$EXTRA_26 ;;
    esac
    out=$WORK/$version
    (cd "$WORK" && PYTHONPATH=$path "$PY" "$STEP" "$ROOT/zoo/make/configs/pt_config_tensor_L1.json" "$out") \
        > "$WORK/$version.log" 2>&1 || { cat "$WORK/$version.log" >&2; exit 1; }
    srcs=("$out"/step0/*/dump.json)
    [ ${#srcs[@]} -eq 1 ] && [ -f "${srcs[0]}" ] || { echo "want one dump.json under $out/step0/*/" >&2; exit 1; }
    src=$(dirname "${srcs[0]}")
    rm -rf "${DEST:?}/$version"
    mkdir -p "$DEST/$version"
    cp -r "$src/dump.json" "$src/dump_tensor_data" "$DEST/$version/"
done
du -sh "$DEST"
