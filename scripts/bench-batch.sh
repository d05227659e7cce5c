#!/usr/bin/env bash
# Benchmarks of batch generation and of the streaming dump reader. Prints one
# line per figure. Uses /usr/bin/time (GNU time) for wall time and peak RSS.
#
#   scripts/bench-batch.sh          fixture dump + synthetic 1 GB dump
#   scripts/bench-batch.sh --5g     also the synthetic 5 GB dump
#   scripts/bench-batch.sh --write  also a fresh --all --shared-module batch over
#                                   the 1 GB dump, its rerun and --check (writes
#                                   ~6 GB of scripts, then removes them; without
#                                   --shared-module each script is ~130 KB)
#
# Peak RSS of a batch is the compact call index plus a fixed record per
# script (src/source/calls.rs, src/op_generate/batch.rs): each --all line also
# prints it per API, the figure that must stay flat as dumps grow.
# Synthetic dumps are made by scripts/make-synthetic-dump.py from the PyTorch
# fixture and kept in $MSPROBE_BENCH_DIR (default ~/.cache/msprobe-rs/bench).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin msprobe
BIN="$(pwd)/${CARGO_TARGET_DIR:-target}/release/msprobe"
[ -x "$BIN" ] || BIN="${CARGO_TARGET_DIR}/release/msprobe"
WORK="${MSPROBE_BENCH_DIR:-$HOME/.cache/msprobe-rs/bench}"
FIXTURE="$(pwd)/tests/fixtures/pytorch/statistics/dump.json"
mkdir -p "$WORK"
cd "$WORK"

timed() { # label, command...: prints wall time and peak RSS
    local label=$1; shift
    /usr/bin/time -f "%e %M" -o time.txt "$@" > out.txt 2> err.txt || true
    read -r secs kb < <(tail -n 1 time.txt)  # GNU time puts "Command exited with non-zero status" first
    echo "$label: ${secs} s, peak RSS $((kb / 1024)) MB$(grep -o '([0-9]*/s)' err.txt | head -1 | sed 's/^/ /')"
}

config() { # dump, api_name (optional)
    if [ -n "${2:-}" ]; then
        printf '{"dump_json_path": "%s", "api_name": "%s"}' "$1" "$2"
    else
        printf '{"dump_json_path": "%s"}' "$1"
    fi
}

last_api() { # the last forward key in a dump file
    tail -c 4000000 "$1" | grep -o '"[A-Za-z_]*\.[A-Za-z_0-9]*\.[0-9]*\.forward"' | tail -1 | tr -d '"' | sed 's/\.forward$//'
}

config "$FIXTURE" > fixture.json
rm -rf fixture_out
timed "fixture dump ($(du -k "$FIXTURE" | cut -f1) KB, 346 APIs): --all --propagation both, fresh folder" \
    "$BIN" -f pytorch op_generate -i fixture.json -o fixture_out --all --propagation both
timed "fixture dump: --all --propagation both, rerun (nothing changed)" \
    "$BIN" -f pytorch op_generate -i fixture.json -o fixture_out --all --propagation both
timed "fixture dump: --check" \
    "$BIN" -f pytorch op_generate -i fixture.json -o fixture_out --all --propagation both --check -q

per_api() { # peak RSS of the last run per API, from its summary line
    local apis
    apis=$(grep -o '^[0-9]* APIs' err.txt | cut -d' ' -f1)
    kb=$(tail -n 1 time.txt | cut -d' ' -f2)
    [ -n "$apis" ] && echo "  $(awk -v kb="$kb" -v n="$apis" 'BEGIN { printf "%.0f bytes of peak RSS per API", kb * 1024 / n }')"
}

sizes=(1G)
write=false
for arg in "$@"; do
    case $arg in
        --5g) sizes+=(5G) ;;
        --write) write=true ;;
    esac
done
for size in "${sizes[@]}"; do
    dump="$WORK/dump_$size.json"
    [ -f "$dump" ] || python3 "$OLDPWD/scripts/make-synthetic-dump.py" "$FIXTURE" "$dump" --bytes "$size"
    bytes=$(stat -c %s "$dump")
    api=$(last_api "$dump")
    config "$dump" "$api" > last.json
    cat "$dump" > /dev/null  # warm the page cache: measure the reader, not the disk
    rm -rf last_out
    timed "$size dump ($bytes bytes): extract the last API ($api)" "$BIN" -f pytorch op_generate -i last.json -o last_out
    secs=$(tail -n 1 time.txt | cut -d' ' -f1)
    echo "  read rate: $(awk -v b="$bytes" -v s="$secs" 'BEGIN { printf "%.0f MB/s", b / 1048576 / s }')"
    config "$dump" > all.json
    rm -rf empty_out
    timed "$size dump: --all --propagation both --check (renders every script in memory, writes none)" \
        "$BIN" -f pytorch op_generate -i all.json -o empty_out --all --propagation both --check -q
    grep -o '^[0-9]* APIs, [0-9]* scripts in [0-9.]* s' err.txt | sed 's/^/  /'
    per_api
    if $write && [ "$size" = 1G ]; then
        rm -rf all_out
        timed "$size dump: --all --propagation both --shared-module, fresh folder" \
            "$BIN" -f pytorch op_generate -i all.json -o all_out --all --propagation both --shared-module
        per_api
        timed "$size dump: the same, rerun (nothing changed)" \
            "$BIN" -f pytorch op_generate -i all.json -o all_out --all --propagation both --shared-module
        grep -o '^[0-9]* APIs, [0-9]* scripts in [0-9.]* s.*' err.txt | sed 's/^/  /'
        timed "$size dump: the same with --check (nothing drifted)" \
            "$BIN" -f pytorch op_generate -i all.json -o all_out --all --propagation both --shared-module --check -q
        grep -o '^[0-9]* APIs, [0-9]* scripts in [0-9.]* s.*' err.txt | sed 's/^/  /'
        rm -rf all_out
    fi
done
