#!/usr/bin/env bash
# The real-size benchmark of the native replay, beside torch doing the same work on the same cores
# in the same run (a benchmark, not a test: the figures vary with the machine and its load).
#
#   scripts/bench-real-size.sh
#
# The dumps (made by zoo/make/make_gpt2_block.sh with the real msprobe when missing, outside the
# repository): the real-data L1 dump of one GPT-2-small-sized block at sequence 512, forward and
# backward ($GPT2_BLOCK_DUMP, default $HOME/.cache/msprobe-rs/bench/gpt2_block), and the issue's
# 2048x2048 matmul ($HOME/.cache/msprobe-rs/bench/matmul_2048). THREADS (default: all cores) is
# both rayon's and torch's thread count. PASSES (default 3): torch's calls are timed that many times,
# and the "in one run" pairs (a torch pass, then a -j 1 replay) made that many times, each figure
# the median (a class of one or two calls of a few milliseconds moves by half between passes). For each dump it prints
#   - `msprobe -f pytorch replay --dump DUMP --data-mode real_data` (the default standard): wall
#     time, CPU time, calls/s, GB of tensor files read per second, peak RSS; then the same with
#     --emulate (the emulated device run as well), and with --standard msprobe (no rounding
#     magnitudes);
#   - torch doing the work the default standard adds to read + bench (bench_torch_replay.py
#     --same-work: the device and the rounding magnitudes of the calls the first run judged on an
#     emulated device or failed), and the ratio of the first run to torch's read + bench and that;
#   - torch replaying every call from the same tensor files (scripts/bench_torch_replay.py): the
#     files read, the float64 bench forward+backward, the device in the dumped dtypes, and the
#     ratios (replay against torch's read + bench; --emulate against torch's whole run);
# and per op class (replay --filter of the class's calls beside torch's figures of those calls). Then
# one ResNet-50 training step (zoo/make/make_resnet50.sh, msprobe 26.2.0, batch 8 at 224x224, in
# $RESNET_DUMPS, default $HOME/.cache/msprobe-rs/bench): its tensor dump as above, and its
# statistics dump with random data (bench, emulated device, rounding magnitudes) against torch
# making the same random data and running the bench and the device (bench_torch_replay.py --random),
# whole and per op class.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${MSPROBE_PYTHON:-$HOME/.cache/msprobe-rs/venv/bin/python}
THREADS=${THREADS:-$(nproc)}
PASSES=${PASSES:-3}
[[ $PASSES =~ ^[1-9][0-9]*$ ]] || { echo "bench-real-size.sh: PASSES must be a whole number of at least 1, not '$PASSES'" >&2; exit 2; }
export RAYON_NUM_THREADS=$THREADS
BLOCK=${GPT2_BLOCK_DUMP:-$HOME/.cache/msprobe-rs/bench/gpt2_block}
MATMUL=$HOME/.cache/msprobe-rs/bench/matmul_2048
zoo/make/make_gpt2_block.sh "$BLOCK"
MODEL=matmul_2048 zoo/make/make_gpt2_block.sh "$MATMUL"
cargo build --release --quiet --bin msprobe
TARGET="${CARGO_TARGET_DIR:-target}"
BIN="$(cd "$TARGET" && pwd)/release/msprobe"
WORK="$(mktemp -d)"
# The counters of the untimed first calls of per_class's replays (above any dump's own).
WARM=1000000000
trap 'rm -rf "$WORK"' EXIT

# One replay of DUMP with FLAGS: prints LABEL's figures, sets SECS (wall), CPU and RSS (peak, KB;
# printed, as torch's, in MB of 10^6 bytes), and OUT (its output folder).
native() {  # LABEL CALLS BYTES DUMP [replay flags...]
    local label=$1 calls=$2 bytes=$3 dump=$4 rss
    shift 4
    # A fresh output folder each time (OUT): a replay resumes from the parts a folder holds.
    OUT=$(mktemp -d "$WORK/out.XXXXXX")
    /usr/bin/time -f "%e %U %S %M" -o "$WORK/time" "$BIN" -f pytorch replay --dump "$dump" \
        --output-dir "$OUT" --top 0 "$@" > /dev/null 2> "$WORK/err.txt" || true
    read -r SECS user sys rss < <(tail -n 1 "$WORK/time")  # after "Command exited with non-zero status N"
    RSS=$rss
    CPU=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
    awk -v l="$label" -v s="$SECS" -v cpu="$CPU" -v r="$rss" -v c="$calls" -v b="$bytes" 'BEGIN {
        printf "%s: %.2f s (CPU %.2f s), %.2f calls/s, %.3f GB/s of tensor files, peak RSS %.0f MB\n", l, s, cpu, c / s, b / 1e9 / s, r * 1024 / 1e6 }'
    grep -E "rows:|^replayed" "$WORK/err.txt" | sed 's/; wrote .*//; s/^/    /' || true
}

# Peak memory of the native run (RSS, KB) against torch's (FILE's JSON): the process peaks, and
# torch's peak less what it held before its first call (its libraries: the native binary's are a
# few MB).
memory() {  # RSS FILE
    local peak base
    peak=$(figure "$2" 'r["peak"]')
    base=$(figure "$2" 'r["baseline"]')
    awk -v n="$1" -v p="$peak" -v b="$base" 'BEGIN {
        printf "ratio native / torch, peak memory: %.0f MB / %.0f MB = %.2fx (torch less its %.0f MB before the first call: %.0f MB, %.2fx)\n", n * 1024 / 1e6, p / 1e6, n * 1024 / p, b / 1e6, (p - b) / 1e6, n * 1024 / (p - b) }'
}

# Torch's JSON figures: FIELD of the last line of FILE (a dotted path into "classes" too).
figure() {  # FILE EXPR
    "$PYTHON" -c 'import json, sys; r = json.loads(open(sys.argv[1]).read().splitlines()[-1]); print(eval(sys.argv[2], {"r": r}))' "$1" "$2"
}

bench_dump() {  # NAME DUMP_DIR
    local name=$1 dump=$2/dump.json calls bytes native emulate plain native_cpu emulate_cpu plain_cpu tb ta tbc tac
    cat "$dump" "$2"/dump_tensor_data/* > /dev/null  # both sides read from the page cache
    "$PYTHON" scripts/bench_torch_replay.py "$dump" --threads "$THREADS" --classes --passes "$PASSES" > "$WORK/torch.txt"
    calls=$(figure "$WORK/torch.txt" 'r["calls"]')
    bytes=$(figure "$WORK/torch.txt" 'r["bytes"]')
    echo "== $name: $calls calls, $(awk -v b="$bytes" 'BEGIN { printf "%.3f", b / 1e9 }') GB of tensor files, $THREADS threads"
    native "msprobe replay (bench f64 vs the recorded device values)" "$calls" "$bytes" "$dump" --data-mode real_data
    native=$SECS native_cpu=$CPU native_rss=$RSS
    # Torch doing the work the default standard adds (the device and the rounding magnitudes of the
    # calls that run says it judged on an emulated device or failed), timed on its own.
    "$PYTHON" scripts/bench_torch_replay.py "$dump" --threads "$THREADS" --same-work "$OUT"/accuracy_checking_details_*.csv > "$WORK/same.txt"
    native "msprobe replay --emulate (bench f64 and the emulated device)" "$calls" "$bytes" "$dump" --data-mode real_data --emulate
    emulate=$SECS emulate_cpu=$CPU
    # The default standard also computes each call's rounding magnitudes (extra passes over the
    # bench, runtime/src/replay/magnitude.rs), which torch's side does not: msprobe's own
    # standard replays the bench alone, the work torch's read + bench does.
    native "msprobe replay --standard msprobe (bench f64 alone, no rounding magnitudes)" "$calls" "$bytes" "$dump" --data-mode real_data --standard msprobe
    plain=$SECS plain_cpu=$CPU
    sed '$d' "$WORK/torch.txt" | sed 's/^/  /'
    tb=$(figure "$WORK/torch.txt" 'round(r["read"] + r["bench"], 3)')
    ta=$(figure "$WORK/torch.txt" 'round(r["wall"], 3)')
    tbc=$(figure "$WORK/torch.txt" 'round(r["cpu_read"] + r["cpu_bench"], 3)')
    tac=$(figure "$WORK/torch.txt" 'round(r["cpu"], 3)')
    awk -v n="$native" -v e="$emulate" -v tb="$tb" -v ta="$ta" 'BEGIN {
        printf "ratio native / torch, wall: replay %.2f s / torch read+bench %.2f s = %.2fx; --emulate %.2f s / torch all %.2f s = %.2fx\n", n, tb, n / tb, e, ta, e / ta }'
    awk -v n="$native_cpu" -v e="$emulate_cpu" -v tb="$tbc" -v ta="$tac" 'BEGIN {
        printf "ratio native / torch, CPU:  replay %.2f s / torch read+bench %.2f s = %.2fx; --emulate %.2f s / torch all %.2f s = %.2fx\n", n, tb, n / tb, e, ta, e / ta }'
    sed '$d' "$WORK/same.txt" | sed 's/^/  /'
    ts=$(awk -v tb="$tb" -v s="$(figure "$WORK/same.txt" 'round(r["same_work"], 3)')" 'BEGIN { print tb + s }')
    awk -v n="$native" -v ts="$ts" 'BEGIN {
        printf "ratio native / torch, the same work: replay %.2f s / torch read+bench and the added work %.2f s = %.2fx wall\n", n, ts, n / ts }'
    awk -v n="$plain" -v c="$plain_cpu" -v tb="$tb" -v tbc="$tbc" 'BEGIN {
        printf "ratio native / torch: --standard msprobe %.2f s / torch read+bench %.2f s = %.2fx wall; CPU %.2f s / %.2f s = %.2fx\n", n, tb, n / tb, c, tbc, c / tbc }'
    memory "$native_rss" "$WORK/torch.txt"
}

# Per op class of DUMP (classes as scripts/bench_torch_replay.py --print-classes names them): replay
# --filter of the class's calls with FLAGS (a process of its own), beside torch's figures of those
# calls in TORCH (its --classes output; PARTS: the parts of torch's work that count, "read bench" or
# "read bench device"): calls/s, peak RSS, and the ratios of wall times and of peak memory (torch's:
# the process's high-water mark over the class's calls). Then "in one run": the seconds of the
# class's calls inside a replay of the whole dump with -j 1 (one call at a time, as torch times
# its calls one after the other in its warm process; the part records each call's seconds; each
# API's first call replayed once before, untimed, as torch's side does),
# against torch's seconds of those calls in a pass over the whole dump made just before it, each
# the median of PASSES such pairs. Pairs, because this machine's speed drifts by a quarter within
# minutes: a class of one or two calls timed on each side minutes apart compared the drift.
per_class() {  # DUMP TORCH PARTS SAME [replay flags...]
    local dump=$1 torch=$2 parts=$3 same=$4 name regex secs user sys rss t ts calls sum peak whole=() beside=() in_run torch_in_run torch_same random=()
    shift 4
    [[ " $* " == *" random_data "* ]] && random=(--random)
    # Torch runs each API's first call once, untimed, before its timed pass (its kernels, and its
    # heap grown to the calls' size); the native side gets the same: a copy of the dump whose
    # first entries are those calls again, counters from WARM, left out of the class's seconds.
    local warmed
    warmed=$(mktemp -d "$WORK/warmed.XXXXXX")
    "$PYTHON" -c 'import json, os, sys
dump, out, warm = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(dump, encoding="utf-8") as f:
    d = json.load(f)
first, seen = {}, set()
for name, entry in d["data"].items():
    if name.endswith(".forward") and not name.startswith("Module."):
        api, n = name[: -len(".forward")].rsplit(".", 1)
        if api not in seen:
            seen.add(api)
            # A key of their own: an identical entry would share the verdict of the timed call, not run.
            first[f"{api}.{warm + int(n)}.forward"] = dict(entry, warm_up=True)
            backward = d["data"].get(f"{api}.{n}.backward")
            if backward is not None:
                first[f"{api}.{warm + int(n)}.backward"] = dict(backward, warm_up=True)
d["data"] = {**first, **d["data"]}
with open(os.path.join(out, "dump.json"), "w", encoding="utf-8") as f:
    json.dump(d, f)
tensors = os.path.join(os.path.dirname(os.path.abspath(dump)), "dump_tensor_data")
if os.path.isdir(tensors):
    os.symlink(tensors, os.path.join(out, "dump_tensor_data"))' "$dump" "$warmed" "$WARM"
    for _ in $(seq "$PASSES"); do
        beside+=("$(mktemp "$WORK/beside.XXXXXX")")
        "$PYTHON" scripts/bench_torch_replay.py "$dump" --threads "$THREADS" --classes --passes 1 "${random[@]}" > "${beside[-1]}"
        whole+=("$(mktemp -d "$WORK/whole.XXXXXX")")
        "$BIN" -f pytorch replay --dump "$warmed/dump.json" --output-dir "${whole[-1]}" --top 0 -q -j 1 "$@" > /dev/null 2>&1 || true
    done
    while IFS=$'\t' read -r name regex; do
        sum=$(for p in $parts; do printf "r['classes']['%s']['%s'] + " "$name" "$p"; done)
        t=$(figure "$torch" "round(${sum}0, 3)")
        ts=$(figure "$same" "round($t + r['classes'].get('$name', {}).get('same_work', 0.0), 3)")
        calls=$(figure "$torch" "r['classes']['$name']['calls']")
        peak=$(figure "$torch" "r['classes']['$name']['peak']")
        /usr/bin/time -f "%e %U %S %M" -o "$WORK/time" "$BIN" -f pytorch replay --dump "$dump" \
            --output-dir "$(mktemp -d "$WORK/class.XXXXXX")" --top 0 -q --filter "$regex" "$@" > /dev/null 2>&1 || true
        read -r secs user sys rss < <(tail -n 1 "$WORK/time")
        # The median over the -j 1 runs; nan when one left no complete part (killed, or a usage error).
        in_run=$("$PYTHON" -c 'import glob, json, re, statistics, sys
def seconds(folder):
    parts = glob.glob(folder + "/replay_parts/*/part_*_of_*.json")
    calls = [c for p in parts for c in json.load(open(p))["calls"]]
    timed = [c for c in calls if re.search(sys.argv[1], c["api"]) and int(c["api"].rsplit(".", 1)[1]) < int(sys.argv[2])]
    return sum(c.get("seconds") or 0.0 for c in timed) if parts else float("nan")
runs = [seconds(f) for f in sys.argv[3:]]
print("nan" if any(r != r for r in runs) else round(statistics.median(runs), 4))' "$regex" "$WARM" "${whole[@]}")
        # Torch's side of the pairs: the median of the class's PARTS over the passes beside them.
        torch_in_run=$("$PYTHON" -c 'import json, statistics, sys
name, parts = sys.argv[1], sys.argv[2].split()
runs = [json.loads(open(f).read().splitlines()[-1])["classes"][name] for f in sys.argv[3:]]
print(round(statistics.median(sum(r[p] for p in parts) for r in runs), 4))' "$name" "$parts" "${beside[@]}")
        torch_same=$(figure "$same" "round($torch_in_run + r['classes'].get('$name', {}).get('same_work', 0.0), 4)")
        awk -v c="$name" -v n="$calls" -v s="$secs" -v cpu="$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" -v r="$rss" -v t="$t" -v ts="$ts" -v p="$peak" -v w="$in_run" -v tw="$torch_in_run" -v tws="$torch_same" 'BEGIN {
            printf "  %-24s %4d calls: native %7.2f s (CPU %7.2f s, %6.1f calls/s, peak %5.0f MB), torch %6.2f s, the same work %6.2f s (peak %5.0f MB): %5.2fx, the same work %5.2fx, memory %4.2fx; in one run %6.3f s beside torch %6.3f s (the same work %6.3f s): %5.2fx, the same work %5.2fx\n", c, n, s, cpu, n / s, r * 1024 / 1e6, t, ts, p / 1e6, s / t, s / ts, r * 1024 / p, w, tw, tws, w / tw, w / tws }'
    done < <("$PYTHON" scripts/bench_torch_replay.py "$dump" --print-classes)
}

bench_dump "GPT-2 block, sequence 512 ($BLOCK)" "$BLOCK"
echo "== per op class of the block (real data, default standard), against torch's read + bench of those calls"
per_class "$BLOCK/dump.json" "$WORK/torch.txt" "read bench" "$WORK/same.txt" --data-mode real_data

# ResNet-50, one training step (zoo/make/make_resnet50.sh, msprobe 26.2.0): the tensor dump with
# real data as above, and the statistics dump with random data (the emulated device judged by the
# rounding bound, magnitudes included) against torch making the same random data and running the
# float64 bench and the float32 device.
RESNET=${RESNET_DUMPS:-$HOME/.cache/msprobe-rs/bench}
zoo/make/make_resnet50.sh "$RESNET"
bench_dump "ResNet-50 step, batch 8, tensor ($RESNET/resnet50_tensor)" "$RESNET/resnet50_tensor"
echo "== per op class of the ResNet-50 step (real data, default standard), against torch's read + bench of those calls"
per_class "$RESNET/resnet50_tensor/dump.json" "$WORK/torch.txt" "read bench" "$WORK/same.txt" --data-mode real_data
stats=$RESNET/resnet50_statistics/dump.json
"$PYTHON" scripts/bench_torch_replay.py "$stats" --threads "$THREADS" --classes --random --passes "$PASSES" > "$WORK/torch_random.txt"
echo "== ResNet-50 step, batch 8, statistics ($stats), random data"
sed '$d' "$WORK/torch_random.txt" | sed 's/^/  /'
calls=$(figure "$WORK/torch_random.txt" 'r["calls"]')
native "msprobe replay --data-mode random_data (bench f64, emulated device, rounding magnitudes)" "$calls" 1 "$stats" --data-mode random_data
memory "$RSS" "$WORK/torch_random.txt"
"$PYTHON" scripts/bench_torch_replay.py "$stats" --threads "$THREADS" --random --same-work "$OUT"/accuracy_checking_details_*.csv > "$WORK/same_random.txt"
sed '$d' "$WORK/same_random.txt" | sed 's/^/  /'
ta=$(figure "$WORK/torch_random.txt" 'round(r["wall"], 3)')
ts=$(figure "$WORK/same_random.txt" "round($ta + r['same_work'], 3)")
awk -v n="$SECS" -v ta="$ta" -v ts="$ts" 'BEGIN { printf "ratio native / torch (random data, bench and device), wall: %.2f s / %.2f s = %.2fx; the same work (and the magnitudes): %.2f s / %.2f s = %.2fx\n", n, ta, n / ta, n, ts, n / ts }'
echo "== per op class of the ResNet-50 statistics step (random data), against torch's random data, bench and device of those calls"
per_class "$stats" "$WORK/torch_random.txt" "read bench device" "$WORK/same_random.txt" --data-mode random_data

bench_dump "matmul 2048x2048, forward and backward ($MATMUL)" "$MATMUL"
