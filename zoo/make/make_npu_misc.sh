#!/usr/bin/env bash
# Make the NPU test dumps of tests/fixtures/npu_misc/ ({clean,planted}/dump.json and
# dump_tensor_data/*.pt): zoo/make/npu_misc/make_dumps.py writes msprobe-format tensor dumps of
# one call of each `NPU.` op of runtime/src/ops/npu_misc.rs, their recorded outputs computed by
# torch on the CPU (no NPU), and a copy with planted errors. Seeded; torch from the project venv.
#
#   zoo/make/make_npu_misc.sh
#
# Environment (defaults in brackets):
#   MSPROBE_RS_VENV     [$HOME/.cache/msprobe-rs/venv]: torch
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=${MSPROBE_RS_VENV:-$HOME/.cache/msprobe-rs/venv}/bin/python
export PYTHONDONTWRITEBYTECODE=1

WORK=$(mktemp -d "${TMPDIR:-/tmp}/msprobe-npu-misc.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
"$PY" "$HERE/npu_misc/make_dumps.py" "$WORK"
DEST=$ROOT/tests/fixtures/npu_misc
rm -rf "$DEST/clean" "$DEST/planted"
mkdir -p "$DEST"
cp -r "$WORK/clean" "$WORK/planted" "$DEST/"
echo "wrote $DEST/clean and $DEST/planted"
