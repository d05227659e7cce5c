#!/usr/bin/env bash
# Benchmark of `msprobe single_compare` against msprobe 8.3.2's
# SingleComparator (Python, a pool of 8 processes) on the same two SingleSave
# runs of 10,000 .npy files each (10 keys x 50 steps x 4 ranks x 5
# micro-steps, float32 [64, 64], each with its .json statistics; 1 array in
# 10 perturbed in run 2). Prints wall time and peak RSS (GNU time: the
# largest single process, so msprobe's figure is one pool worker or the
# parent, not their sum), then checks that both tools wrote the same figures.
#
#   scripts/bench-single-compare.sh
#
# Needs: the test Python ($MSPROBE_PYTHON, default the venv of
# scripts/setup-python-env.sh, with numpy and openpyxl), msprobe 8.3.2's
# source ($MSPROBE_832, default ~/.cache/msprobe-rs/msprobe-8.3.2) and its
# extra dependencies in a folder of their own ($MSPROBE_832_DEPS, default
# ~/.cache/msprobe-rs/bench-deps, made by
# `python -m pip install --target ~/.cache/msprobe-rs/bench-deps pandas==2.2.3 tqdm numpy==1.26.4`).
# The runs are kept in $MSPROBE_BENCH_DIR/single_compare (default
# ~/.cache/msprobe-rs/bench/single_compare).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin msprobe
BIN="$(pwd)/${CARGO_TARGET_DIR:-target}/release/msprobe"
[ -x "$BIN" ] || BIN="${CARGO_TARGET_DIR}/release/msprobe"
PY="${MSPROBE_PYTHON:-$HOME/.cache/msprobe-rs/venv/bin/python}"
MSPROBE_SRC="${MSPROBE_832:-$HOME/.cache/msprobe-rs/msprobe-8.3.2}"
DEPS="${MSPROBE_832_DEPS:-$HOME/.cache/msprobe-rs/bench-deps}"
WORK="${MSPROBE_BENCH_DIR:-$HOME/.cache/msprobe-rs/bench}/single_compare"
mkdir -p "$WORK"
cd "$WORK"

if [ ! -f runs.done ]; then
    rm -rf run1 run2
    "$PY" - <<'EOF'
import json, os
import numpy as np
rng = np.random.default_rng(0)
for key in range(10):
    tag = f"key{key}"
    for step in range(50):
        for rank in range(4):
            for micro in range(5):
                a = rng.standard_normal((64, 64), dtype=np.float32)
                b = a.copy()
                if rng.random() < 0.1:
                    b[rng.integers(64), rng.integers(64)] += np.float32(1e-3)
                for run, arr in (("run1", a), ("run2", b)):
                    d = f"{run}/data/{tag}/step{step}/rank{rank}/micro_step{micro}"
                    os.makedirs(d, exist_ok=True)
                    np.save(f"{d}/{tag}.npy", arr)
                    with open(f"{d}/{tag}.json", "w") as f:
                        json.dump({"data": {"max": float(arr.max()), "min": float(arr.min()), "shape": [64, 64]}}, f, indent=4)
EOF
    touch runs.done
fi
echo "runs: $(find run1 -name '*.npy' | wc -l) + $(find run2 -name '*.npy' | wc -l) .npy files, $(du -sh run1 | cut -f1) + $(du -sh run2 | cut -f1)"

timed() { # label, command...: prints wall time and peak RSS
    local label=$1; shift
    /usr/bin/time -f "%e %M" -o time.txt "$@" > out.txt 2> err.txt || true
    read -r secs kb < <(tail -n 1 time.txt)
    echo "$label: ${secs} s, peak RSS $((kb / 1024)) MB"
}

warm() { find run1 run2 -type f -exec cat {} + > /dev/null; }  # measure the tools, not the disk

warm
rm -rf out_msprobe
# (its tqdm bar is refreshed in a busy loop: its stderr goes to /dev/null)
timed "msprobe 8.3.2 SingleComparator.compare(num_processes=8)" bash -c \
    "PYTHONPATH='$MSPROBE_SRC:$DEPS' '$PY' -c \"from msprobe.core.single_save.single_comparator import SingleComparator as S; S.compare('run1', 'run2', 'out_msprobe', 8)\" 2> /dev/null"
for jobs in 8 "$(nproc)"; do
    warm
    rm -rf out_rs
    timed "msprobe-rs single_compare -j $jobs" "$BIN" single_compare run1 run2 -o out_rs -j "$jobs"
done
tail -n 1 err.txt

"$PY" - <<'EOF'
import os
import openpyxl
books = sorted(os.listdir("out_msprobe"))
assert books == sorted(os.listdir("out_rs")), (books, sorted(os.listdir("out_rs")))
# msprobe's writer keeps 16 significant digits of a float (so the float32
# maximum errors lose their 17th); ours writes the exact value.
def written(v):
    return float("%.16g" % v) if isinstance(v, float) else v
rows = rounded = 0
for name in books:
    ours = [r[:12] for r in openpyxl.load_workbook(f"out_rs/{name}")["Sheet1"].iter_rows(values_only=True)]
    theirs = [tuple(r) for r in openpyxl.load_workbook(f"out_msprobe/{name}")["Sheet1"].iter_rows(values_only=True)]
    assert [tuple(map(written, r)) for r in ours] == theirs, name
    rounded += sum(a != b for r, t in zip(ours, theirs) for a, b in zip(r, t))
    rows += len(ours) - 1
print(f"parity: {len(books)} workbooks, {rows} rows: every cell of msprobe's 12 columns identical, "
      f"{rounded} of them once ours is rounded to msprobe's 16 significant digits")
EOF
