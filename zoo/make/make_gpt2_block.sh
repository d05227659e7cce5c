#!/usr/bin/env bash
# Make the real-size tensor dumps of the benchmark (scripts/bench-real-size.sh) with the real
# msprobe, level L1, task tensor, float32, forward and backward. Not committed: they land in a cache
# folder outside the repository, and are made only when missing.
#
#   zoo/make/make_gpt2_block.sh [DEST]                       the GPT-2 block
#   MODEL=matmul_2048 zoo/make/make_gpt2_block.sh [DEST]     the 2048x2048 matmul
#
# MODEL names a script of zoo/make/bench/: gpt2_block (default: one GPT-2-small-sized block, hidden
# 768, 12 heads, MLP 3072, sequence 512; 279 MB at batch 1, BATCH=2 doubles the activations) or
# matmul_2048 (one torch.matmul of two 2048x2048 matrices; 101 MB). DEST (default: for gpt2_block
# $GPT2_BLOCK_DUMP if set, else $HOME/.cache/msprobe-rs/bench/MODEL) receives dump.json and
# dump_tensor_data/. A DEST that already holds a dump.json is left as it is; remove it to make it
# again. The dumps are seeded (zoo_common.SEED, fixed generators): the same values every time.
#
# msprobe 8.3.2 is taken from MSPROBE_PT_TARGET (default $HOME/.cache/msprobe-rs/msprobe-8.3.2), on
# PYTHONPATH only while the model runs; zoo/make/make_pytorch.sh installs it there when missing.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${MSPROBE_RS_VENV:-$HOME/.cache/msprobe-rs/venv}
TARGET=${MSPROBE_PT_TARGET:-$HOME/.cache/msprobe-rs/msprobe-8.3.2}
MODEL=${MODEL:-gpt2_block}
[ -f "$ROOT/zoo/make/bench/$MODEL.py" ] || { echo "no model zoo/make/bench/$MODEL.py" >&2; exit 1; }
DEFAULT=$HOME/.cache/msprobe-rs/bench/$MODEL
[ "$MODEL" = gpt2_block ] && DEFAULT=${GPT2_BLOCK_DUMP:-$DEFAULT}
DEST=${1:-$DEFAULT}
BATCH=${BATCH:-1}
ARGS=()
[ "$MODEL" = gpt2_block ] && ARGS=("$BATCH")
PY=$VENV/bin/python
export PYTHONDONTWRITEBYTECODE=1

if [ -f "$DEST/dump.json" ]; then
  echo "$DEST/dump.json exists (remove $DEST to make it again)"
  exit 0
fi
[ -x "$PY" ] || { echo "no python at $PY (set MSPROBE_RS_VENV)" >&2; exit 1; }
PYTHONPATH=$TARGET "$PY" -c 'from msprobe.pytorch import PrecisionDebugger' >/dev/null 2>&1 ||
  { echo "msprobe 8.3.2 does not import from $TARGET (zoo/make/make_pytorch.sh installs it)" >&2; exit 1; }

mkdir -p "$(dirname "$DEST")"
WORK=$(mktemp -d "$(dirname "$DEST")/.$MODEL.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
echo "== $MODEL ${ARGS[*]+(batch ${ARGS[*]})} -> $DEST"
(cd "$WORK" && PYTHONPATH=$TARGET "$PY" "$ROOT/zoo/make/bench/$MODEL.py" \
    "$ROOT/zoo/make/configs/pt_config_tensor_L1.json" "$WORK/out" ${ARGS[@]+"${ARGS[@]}"}) > "$WORK/log" 2>&1 ||
  { cat "$WORK/log" >&2; exit 1; }
grep "loss" "$WORK/log" | tail -1
src=$WORK/out/step0/rank
[ -f "$src/dump.json" ] || { echo "no dump.json made" >&2; cat "$WORK/log" >&2; exit 1; }
mkdir -p "$WORK/dump"
mv "$src/dump.json" "$src/dump_tensor_data" "$WORK/dump/"
mv "$WORK/dump" "$DEST"
echo "$(du -sh "$DEST" | cut -f1) in $DEST"
