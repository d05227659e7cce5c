#!/usr/bin/env bash
# Regenerate the PyTorch zoo dumps (tests/fixtures/zoo/pytorch/) with the real msprobe.
#
#   zoo/make/make_pytorch.sh [model ...]      (default: every zoo/make/pytorch/<model>.py)
#
# msprobe (PyPI mindstudio-probe 8.3.2) and the runtime dependencies the project venv lacks are
# installed, if missing, into a folder of their own (MSPROBE_PT_TARGET) that is put on PYTHONPATH
# only while the models run: the project venv (torch, numpy) stays free of msprobe.
# Each model runs one training step (after one undumped warm-up step) under each config in
# zoo/make/configs/ (task statistics and task tensor, level L1); the dump.json files (and, for the
# tensor task, dump_tensor_data/) are copied to tests/fixtures/zoo/pytorch/<model>/{statistics,tensor}/.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${MSPROBE_RS_VENV:-$HOME/.cache/msprobe-rs/venv}
TARGET=${MSPROBE_PT_TARGET:-$HOME/.cache/msprobe-rs/msprobe-8.3.2}
PY=$VENV/bin/python
export PYTHONDONTWRITEBYTECODE=1
DEST=$ROOT/tests/fixtures/zoo/pytorch
MAKE=$ROOT/zoo/make

# msprobe 8.3.2 and what `from msprobe.pytorch import PrecisionDebugger` needs beyond torch/numpy
# (pinned to the versions the committed dumps were made with; installed without dependencies so
# that pip never brings a second torch or numpy into the target folder).
MSPROBE_PKGS=(
  mindstudio-probe==8.3.2
  pandas==2.0.3 python-dateutil==4.0.0 pytz==2026.6 tzdata==2026.6 pyyaml==6.0.4 tqdm==4.70.1
  matplotlib==3.11.2 pyparsing==3.3.3 cycler==0.12.1 kiwisolver==1.5.1 fonttools==4.68.0
  openpyxl==3.1.5 et_xmlfile==2.0.0 einops==0.8.2 tensorboard==2.21.0 absl-py==2.5.1
)

[ -x "$PY" ] || { echo "no python at $PY (set MSPROBE_RS_VENV)" >&2; exit 1; }
"$PY" -c 'import torch, numpy' || { echo "$PY lacks torch/numpy" >&2; exit 1; }

msprobe_ok() { PYTHONPATH=$TARGET "$PY" -c 'from msprobe.pytorch import PrecisionDebugger, seed_all' >/dev/null 2>&1; }
if ! msprobe_ok; then
  echo "installing msprobe 8.3.2 into $TARGET"
  "$PY" -m pip install -q --no-deps --upgrade --target "$TARGET" "${MSPROBE_PKGS[@]}"
  msprobe_ok || { PYTHONPATH=$TARGET "$PY" -c 'from msprobe.pytorch import PrecisionDebugger' ; exit 1; }
fi
PYTHONPATH=$TARGET "$PY" - <<'PYEOF'
import importlib.metadata as md, torch, numpy
print("msprobe", md.version("mindstudio-probe"), "| torch", torch.__version__, "| numpy", numpy.__version__)
PYEOF

if [ $# -gt 0 ]; then
  MODELS=("$@")
else
  MODELS=()
  for f in "$MAKE"/pytorch/*.py; do
    m=$(basename "$f" .py)
    [ "$m" = zoo_common ] || MODELS+=("$m")
  done
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/msprobe-zoo-pt.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

for m in "${MODELS[@]}"; do
  for task in statistics tensor; do
    echo "== $m ($task)"
    out=$WORK/$m/$task
    (cd "$WORK" && PYTHONPATH=$TARGET "$PY" "$MAKE/pytorch/$m.py" "$MAKE/configs/pt_config_${task}_L1.json" "$out") \
      > "$WORK/$m.$task.log" 2>&1 || { cat "$WORK/$m.$task.log" >&2; exit 1; }
    grep "loss" "$WORK/$m.$task.log" | tail -1
    src=$out/step0/rank
    [ -f "$src/dump.json" ] || { echo "no dump.json for $m/$task" >&2; cat "$WORK/$m.$task.log" >&2; exit 1; }
    rm -rf "${DEST:?}/$m/$task"
    mkdir -p "$DEST/$m/$task"
    cp "$src/dump.json" "$DEST/$m/$task/"
    if [ "$task" = tensor ]; then
      cp -r "$src/dump_tensor_data" "$DEST/$m/$task/"
    fi
  done
done

"$PY" "$MAKE/summarize.py" "$DEST" --markdown
