#!/usr/bin/env bash
# Benchmarks of the native runtime, each printing the figure it measures:
#   1. the metric pass on N f32 elements (default 1e8) against msprobe's
#      NumPy formulas on the same data (runtime/benches/compare_numpy.py);
#   2. `msprobe replay` of every API of the fixture dumps, forward and backward;
#   3. one API end to end: `msprobe replay -i CONFIG` against running the
#      generated Python script for the same call.
# Needs the Python environment for (1) and (3): scripts/setup-python-env.sh makes it.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="$(scripts/setup-python-env.sh | tail -n 1)"
N="${N:-100000000}"
cargo build --release --quiet --workspace --bins --benches
TARGET="${CARGO_TARGET_DIR:-target}"
BIN="$(cd "$TARGET" && pwd)/release/msprobe"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

echo "== 1. metric pass, $N float32 elements per side"
N=$N cargo bench --quiet -p runtime --bench compare 2>/dev/null | tail -n 1
N=$N "$PYTHON" runtime/benches/compare_numpy.py | tail -n 1

echo "== 2. replay every API of a fixture dump, forward and backward (release)"
for fw in pytorch mindspore; do
    /usr/bin/time -f "%e s, peak RSS %M KB" "$BIN" -f $fw replay --dump "tests/fixtures/$fw/statistics/dump.json" \
        --output-dir "$WORK/$fw" --top 0 > "$WORK/$fw.txt" 2> "$WORK/$fw.err" || true
    echo "$fw: $(tail -n 1 "$WORK/$fw.err") ($(grep -c . "$WORK/$fw.txt") rows)"
done

echo "== 3. one API end to end (Mint.matmul.0, backward, real data)"
cat > "$WORK/cfg.json" <<JSON
{"dump_json_path": "$(pwd)/tests/fixtures/mindspore/tensor/dump.json", "api_name": "Mint.matmul.0", "propagation": "backward", "data_mode": "real_data"}
JSON
(cd "$WORK" && /usr/bin/time -f "msprobe replay (native): %e s, peak RSS %M KB" "$BIN" -f mindspore replay -i cfg.json > /dev/null 2> native.err || true; tail -n 1 native.err)
(cd "$WORK" && "$BIN" -f mindspore op_generate -i cfg.json -o py > /dev/null \
    && /usr/bin/time -f "generated Python script (MindSpore + torch): %e s, peak RSS %M KB" "$PYTHON" py/Mint.matmul.0.backward.py > /dev/null 2> py.err || true; tail -n 1 py.err)
