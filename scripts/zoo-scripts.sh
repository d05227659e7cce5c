#!/usr/bin/env bash
# The script sweep of the model zoo (tests/fixtures/zoo): for every zoo dump,
# `op_generate --all --propagation both` (random_data for the statistics
# dumps, real_data for the tensor dumps), every generated script run with
# real torch (and MindSpore for MindSpore dumps), and each script's ending
# classified from its exit status, CSV and stderr (scripts/zoo_scripts.py):
# verdict, documented skip (the tested MindSpore call has no kernel),
# other skip, input error, traceback. Prints a table per dump of the
# distinct API cases (`Prefix.op` in one direction) and lists every case that
# is not a verdict with its first error line; WORK/summary.json has the figures.
#
#   scripts/zoo-scripts.sh                      # every zoo dump
#   scripts/zoo-scripts.sh mindspore/ms_cnn     # dumps whose <framework>/<model>/<task> contains an argument
#   scripts/zoo-scripts.sh --report WORK        # the tables of an earlier run again
#
# Environment: MSPROBE_PYTHON (default ~/.cache/msprobe-rs/venv/bin/python,
# made by scripts/setup-python-env.sh), ZOO_SCRIPTS_DIR (the work folder;
# default a new temporary one, kept and printed), JOBS (parallel chunks,
# default 2), CHUNK (scripts per Python process, default 40),
# ZOO_SCRIPT_TIMEOUT (seconds per script, default 300), FILTER (a regex:
# only the APIs op_generate --filter selects), CARGO_TARGET_DIR.
#
# Each chunk is one Python process that imports the frameworks once and forks
# a fresh child per script, which runs it as `python SCRIPT --output-dir ...`
# would (chunks run through `xargs -P $JOBS`). The whole zoo is 5,628
# scripts: 14 minutes on 2 CPU cores (24 while other builds shared them); a
# fresh interpreter per script would take hours, mostly importing torch and
# MindSpore. Not run in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
py=${MSPROBE_PYTHON:-$HOME/.cache/msprobe-rs/venv/bin/python}
helper=$repo/scripts/zoo_scripts.py

if [[ ${1:-} == --report ]]; then
    exec "$py" "$helper" report "${2:?usage: $0 --report WORK}"
fi

[[ -x $py ]] || { echo "zoo-scripts: no Python at $py (run scripts/setup-python-env.sh or set MSPROBE_PYTHON)" >&2; exit 2; }
cargo build --release --quiet
msprobe=${CARGO_TARGET_DIR:-$repo/target}/release/msprobe
work=${ZOO_SCRIPTS_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/zoo-scripts.XXXXXX")}
mkdir -p "$work"
work=$(cd "$work" && pwd)
jobs=${JOBS:-2}
chunk=${CHUNK:-40}
start=$(date +%s)

chunks=$work/chunks
rm -rf "$chunks"
mkdir -p "$chunks"
n_scripts=0
for dump in tests/fixtures/zoo/{pytorch,mindspore}/*/{statistics,tensor}/dump.json; do
    [[ -f $dump ]] || continue
    key=${dump#tests/fixtures/zoo/}
    key=${key%/dump.json}                      # pytorch/moe/statistics
    if (($#)); then
        keep=0
        for want in "$@"; do [[ $key == *"$want"* ]] && keep=1; done
        ((keep)) || continue
    fi
    framework=${key%%/*}
    task=${key##*/}
    mode=random_data
    [[ $task == tensor ]] && mode=real_data
    dir=$work/$key
    rm -rf "$dir"
    mkdir -p "$dir/runs"
    printf '{"dump_json_path": "%s", "data_mode": "%s", "random_seed": 42, "iter_times": 1}\n' "$repo/$dump" "$mode" >"$dir/config_op.json"
    select=(--all)
    [[ -n ${FILTER:-} ]] && select=(--filter "$FILTER")
    if ! "$msprobe" -f "$framework" op_generate -i "$dir/config_op.json" -o "$dir/scripts" "${select[@]}" --propagation both -q 2>"$dir/op_generate.stderr"; then
        echo "zoo-scripts: $key: op_generate failed (some calls may have no script):" >&2
        cat "$dir/op_generate.stderr" >&2
    fi
    [[ -d $dir/scripts ]] || continue
    # One chunk file per CHUNK scripts, named after the dump.
    find "$dir/scripts" -name '*.py' | sort | split -l "$chunk" - "$chunks/${key//\//+}."
    n_scripts=$((n_scripts + $(find "$dir/scripts" -name '*.py' | wc -l)))
done
echo "zoo-scripts: $n_scripts scripts in $work; running them ($jobs in parallel, $chunk per process)" >&2

run_chunk() {
    local file=$1 key
    key=$(basename "$file")
    key=${key%.*}
    key=${key//+//}
    xargs -a "$file" "$py" "$helper" run "$work/$key/runs" >>"$work/runner.log" 2>&1 || echo "zoo-scripts: chunk $file: runner failed (see $work/runner.log)" >&2
    printf '.' >&2
}
export -f run_chunk
export py helper work
find "$chunks" -type f | sort | xargs -P "$jobs" -I{} bash -c 'run_chunk "$@"' _ {}
echo >&2

"$py" "$helper" report "$work"
echo
echo "zoo-scripts: $n_scripts scripts in $(( $(date +%s) - start )) s; work folder $work"
