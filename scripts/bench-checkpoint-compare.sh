#!/usr/bin/env bash
# Benchmark of Megatron checkpoint compare (`msprobe -f pytorch config_check
# -c CKPT1 CKPT2 -o out.json`) against msprobe 8.3.2's compare_checkpoints
# (Python, torch.load) on two ~1 GB bf16 checkpoints of a GPT-like model
# (hidden 2048, 10 layers, vocab 8192), TP 2 x PP 2, written by
# tests/checkpoint_compare/make_checkpoints.py with real torch; the second
# has one parameter perturbed. Prints wall time and peak RSS (GNU time),
# then checks that both tools wrote the same figures (msprobe computes in
# float32, we sum in float64: l2 and cos agree to float32 precision), except
# where msprobe's merge is wrong (README, checkpoint compare differences).
#
#   scripts/bench-checkpoint-compare.sh
#
# Needs: the test Python ($MSPROBE_PYTHON, default the venv of
# scripts/setup-python-env.sh, with torch and numpy), msprobe 8.3.2's source
# with its pure-Python dependencies ($MSPROBE_832, default
# ~/.cache/msprobe-rs/msprobe-8.3.2; tqdm and yaml are there). msprobe needs
# `import megatron` to unpickle the checkpoints: a stub package holding the
# enum the checkpoints name is written next to them. The checkpoints (about
# 2.2 GB) are kept in $MSPROBE_BENCH_DIR/checkpoint (default
# ~/.cache/msprobe-rs/bench/checkpoint).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"
cargo build --release --quiet --bin msprobe
BIN="$(pwd)/${CARGO_TARGET_DIR:-target}/release/msprobe"
[ -x "$BIN" ] || BIN="${CARGO_TARGET_DIR}/release/msprobe"
PY="${MSPROBE_PYTHON:-$HOME/.cache/msprobe-rs/venv/bin/python}"
MSPROBE_SRC="${MSPROBE_832:-$HOME/.cache/msprobe-rs/msprobe-8.3.2}"
WORK="${MSPROBE_BENCH_DIR:-$HOME/.cache/msprobe-rs/bench}/checkpoint"
mkdir -p "$WORK"
cd "$WORK"

MODEL=(--tp 2 --pp 2 --hidden 2048 --layers 10 --vocab 8192 --dtype bf16 --no-full)
if [ ! -f ckpts.done ]; then
    rm -rf ckpt1 ckpt2
    "$PY" "$REPO/tests/checkpoint_compare/make_checkpoints.py" ckpt1 "${MODEL[@]}"
    "$PY" "$REPO/tests/checkpoint_compare/make_checkpoints.py" ckpt2 "${MODEL[@]}" --perturb decoder.layers.7.mlp.linear_fc2.weight
    touch ckpts.done
fi
mkdir -p stub/megatron/core
touch stub/megatron/__init__.py stub/megatron/core/__init__.py
cat > stub/megatron/core/enums.py <<'EOF'
import enum


class ModelType(enum.Enum):
    encoder_or_decoder = 1
    encoder_and_decoder = 2
EOF
echo "checkpoints: $(du -sh ckpt1 | cut -f1) + $(du -sh ckpt2 | cut -f1), $(find ckpt1 -name model_optim_rng.pt | wc -l) rank files each"

timed() { # label, command...: prints wall time and peak RSS
    local label=$1; shift
    /usr/bin/time -f "%e %M" -o time.txt "$@" > out.txt 2> err.txt || { cat err.txt; exit 1; }
    read -r secs kb < <(tail -n 1 time.txt)
    echo "$label: ${secs} s, peak RSS $((kb / 1024)) MB"
}

warm() { find ckpt1 ckpt2 -type f -exec cat {} + > /dev/null; }  # measure the tools, not the disk

warm
rm -f out_msprobe.json out_rs.json
# msprobe asks twice per file whether to load it (torch.load, weights_only=False): yes.
timed "msprobe 8.3.2 compare_checkpoints" bash -c \
    "yes y | PYTHONPATH='$MSPROBE_SRC:$WORK/stub' '$PY' -c 'import sys; from msprobe.msprobe import main; sys.argv[0] = \"msprobe\"; main()' \
     -f pytorch config_check -c ckpt1 ckpt2 -o out_msprobe.json"
warm
timed "msprobe-rs config_check -c" "$BIN" -f pytorch config_check -c ckpt1 ckpt2 -o out_rs.json
cat out.txt

"$PY" - <<'EOF'
import json
ms, rs = json.load(open("out_msprobe.json")), json.load(open("out_rs.json"))
assert sorted(ms) == sorted(rs), (set(ms) ^ set(rs))
fused = [k for k in ms if "mlp.linear_fc1.layer_norm_weight" in k]
dl2 = dcos = 0.0
for k in ms:
    if k in fused:
        # msprobe concatenates TE's replicated norm across TP ranks.
        assert ms[k]["numel"] == 2 * rs[k]["numel"] and ms[k]["shape"] == [2 * rs[k]["shape"][0]], (k, ms[k], rs[k])
        continue
    assert (ms[k]["numel"], ms[k]["shape"]) == (rs[k]["numel"], rs[k]["shape"]), (k, ms[k], rs[k])
    if rs[k]["l2"] == 0.0:
        assert ms[k]["l2"] == 0.0 and abs(ms[k]["cos"] - 1) < 1e-6, (k, ms[k])
    dl2 = max(dl2, abs(ms[k]["l2"] - rs[k]["l2"]) / max(rs[k]["l2"], 1e-30))
    dcos = max(dcos, abs(ms[k]["cos"] - rs[k]["cos"]))
differ = [k for k in rs if rs[k]["l2"] != 0.0]
print(f"parity: {len(rs)} parameters, numel and shape identical (but msprobe's {len(fused)} TP-concatenated "
      f"mlp.linear_fc1.layer_norm_weight), differing {differ}; largest l2 difference {dl2:.1e} (relative), cos {dcos:.1e}")
EOF
