#!/usr/bin/env bash
# Benchmark of nan_analyze: a synthetic 4-rank step, each rank's dump.json
# SIZE (default 1G) big, analysed by this tool and by msprobe 8.3.2 on the
# same data. Prints wall time and peak RSS (GNU /usr/bin/time) of each, and
# the op each one reports.
#
#   scripts/bench-nan-analyze.sh [SIZE]        e.g. 1G (the default), 200M
#
# The step is made from the PyTorch fixture: scripts/make-synthetic-dump.py
# scales it to SIZE, then every rank gets a copy with an all_reduce over the
# four ranks every $COMM_EVERY entries (default 2000), the fixture's -Infinity statistics (an
# attention mask) made finite, and on rank 2 one op at 90% of the file whose
# output turns NaN: the NaN reaches the next all_reduce's input on rank 2 and
# its output on every rank, so the search runs through all three phases'
# work. Data goes to $MSPROBE_BENCH_DIR (default ~/.cache/msprobe-rs/bench),
# never into the repository; it needs about 5 × SIZE of disk. Each dump is
# 99.5% of SIZE: msprobe refuses a .json file over 1 GiB.
#
# msprobe: $MSPROBE_PYTHON (default ~/.cache/msprobe-rs/venv/bin/python) with
# PYTHONPATH=$MSPROBE_SRC (default ~/.cache/msprobe-rs/msprobe-8.3.2), given
# at most $MSPROBE_TIMEOUT seconds (default 3600).
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE="${1:-1G}"
cargo build --release --quiet --bin msprobe
BIN="${CARGO_TARGET_DIR:-$(pwd)/target}/release/msprobe"
FIXTURE="$(pwd)/tests/fixtures/pytorch/statistics"
MAKE="$(pwd)/scripts/make-synthetic-dump.py"
PY="${MSPROBE_PYTHON:-$HOME/.cache/msprobe-rs/venv/bin/python}"
SRC="${MSPROBE_SRC:-$HOME/.cache/msprobe-rs/msprobe-8.3.2}"
WORK="${MSPROBE_BENCH_DIR:-$HOME/.cache/msprobe-rs/bench}/nan_analyze_$SIZE"
mkdir -p "$WORK"
cd "$WORK"

if [ ! -f step/rank3/dump.json ]; then
    # 99.5% of SIZE: the all_reduce entries add a little, and msprobe refuses a .json over 1 GiB.
    bytes=$(PYTHONDONTWRITEBYTECODE=1 python3 -c "import sys; sys.path.insert(0, '$(dirname "$MAKE")'); from importlib import import_module; print(int(import_module('make-synthetic-dump').parse_size('$SIZE') * 0.995))")
    [ -f base.json ] || python3 "$MAKE" "$FIXTURE/dump.json" base.json --bytes "$bytes"
    python3 - base.json "$FIXTURE/stack.json" <<'EOF'
import os, sys
base, stack = sys.argv[1], sys.argv[2]
entries = sum(1 for line in open(base) if line == "},\n") + 1
origin_at = entries * 9 // 10
every = int(os.environ.get("COMM_EVERY", "2000"))
def tensor(nan):
    return '{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [64], "Max": %s, "Min": 0.0}' % ("NaN" if nan else "1.0")
for rank in range(4):
    os.makedirs(f"step/rank{rank}", exist_ok=True)
    tmp = f"step/rank{rank}/dump.json.tmp"
    with open(base) as src, open(tmp, "w") as out:
        prev, n, comm, poisoned = "", 0, 0, False
        for line in src:
            start = line.startswith('  "') and line.rstrip().endswith(": {") and (prev == "},\n" or prev.endswith('"data": {\n'))
            if start:
                if n and n % every == 0:
                    group = '{"group": {"type": "torch.ProcessGroup", "group_ranks": [0, 1, 2, 3], "group_id": 1}}'
                    out.write(f'  "Distributed.all_reduce.{comm}.forward": {{"input_args": [{tensor(poisoned and rank == 2)}], "input_kwargs": {group}, "output": [{tensor(poisoned)}]}},\n')
                    comm += 1
                if n == origin_at:
                    if rank == 2:
                        out.write(f'  "Torch.nan_origin.0.forward": {{"input_args": [{tensor(False)}], "input_kwargs": {{}}, "output": [{tensor(True)}]}},\n')
                    poisoned = True
                n += 1
            if ("\"Min\"" in line or "\"Max\"" in line) and "Infinity" in line:
                line = line.replace("-Infinity", "-3.0").replace("Infinity", "3.0")
            out.write(line)
            prev = line
    os.replace(tmp, f"step/rank{rank}/dump.json")
    with open(f"step/rank{rank}/construct.json", "w") as f:
        f.write("{}")
    with open(stack) as f, open(f"step/rank{rank}/stack.json", "w") as g:
        g.write(f.read())
print(f"{entries} entries per rank, {entries // every} all_reduce, NaN origin on rank 2 at entry {origin_at}", file=sys.stderr)
EOF
    rm -f base.json
fi

timed() { # label, out dir, command...: wall time, peak RSS, the reported op
    local label=$1 out=$2; shift 2
    rm -rf "$out"
    /usr/bin/time -f "%e %M" -o time.txt "$@" > log.txt 2>&1 || echo "  (exit $?; last lines: $(tail -n 2 log.txt | tr '\n' ' '))"
    read -r secs kb < <(tail -n 1 time.txt)
    local found
    found=$(cat "$out"/anomaly_analyze_*.json 2>/dev/null | grep -o '"rank_[0-9]*"\|"op_name": "[^"]*"' | tr '\n' ' ' || true)
    echo "$label: ${secs} s, peak RSS $((kb / 1024)) MB; reported: ${found:-nothing}"
}

bytes=$(du -cb step/rank*/dump.json | tail -n 1 | cut -f1)
echo "step: 4 ranks, $((bytes / 1048576)) MB of dump.json in all"
cat step/rank*/dump.json > /dev/null  # warm the page cache: measure the analysis, not the disk
timed "msprobe-rs nan_analyze" out_rs "$BIN" -f pytorch nan_analyze -i step -o out_rs
timed "msprobe 8.3.2 nan_analyze" out_py env PYTHONPATH="$SRC" timeout "${MSPROBE_TIMEOUT:-3600}" "$PY" -m msprobe.msprobe -f pytorch nan_analyze -i step -o out_py
