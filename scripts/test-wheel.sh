#!/usr/bin/env bash
# The wheel as users install it (README, "Installation"): builds it from this
# checkout with maturin (debug profile, the shared cargo build), installs it
# into fresh virtual environments, alone, after mindstudio-probe 8.3.2 and
# before it, and checks in each: which file holds the `msprobe` script slot,
# that msprobe-rs's commands run msprobe-rs whichever package was installed
# last (`msprobe -f mindspore op_generate -i examples/mindspore/config_op.json
# -o out` writes msprobe-rs's script; under mindstudio-probe's script through
# the wheel's start-up hook, msprobe_rs_route.pth), that mindstudio-probe's
# commands answer exactly as mindstudio-probe's own script does (output and
# exit code), `import msprobe_rs`, a generated script that runs, a generated
# Rust project that builds and runs with no path of this clone in it, and
# `pip uninstall` of either package, the other one still working.
# Any failed step stops the script with exit 1 and says which.
#
# Run by scripts/test.sh after `cargo test`. Needs MSPROBE_PYTHON (the
# environment of scripts/setup-python-env.sh: it runs the generated script,
# and lends torch to mindstudio-probe's `-f pytorch` commands). Caches under
# ~/.cache/msprobe-rs: maturin (wheel-tools/), the generated Rust project
# (wheel-test/, so its build is reused); packages come from PyPI through
# pip's cache.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd -P)"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/msprobe-rs"
: "${MSPROBE_PYTHON:?set MSPROBE_PYTHON (scripts/setup-python-env.sh prints it)}"
: "${CARGO_TARGET_DIR:=$REPO/target}"
export CARGO_TARGET_DIR
MATURIN="maturin==1.16.0"
PROBE="mindstudio-probe==8.3.2"
# What mindstudio-probe's CLI imports beyond MSPROBE_PYTHON's environment
# (its full requirements are ~430 MB: twisted, pyopenssl, ...), installed
# once into a cached folder; both are lent to the environments by a .pth file.
PROBE_DEPS="numpy==1.26.4 pandas==2.0.3 PyYAML==6.0.4 tqdm==4.70.1 matplotlib==3.11.2 einops==0.8.2 tensorboard==2.21.0"
PY="${PYTHON:-python3}"
VERSION="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
unset MSPROBE_BIN MSPROBE_RUNTIME_PATH PYTHONPATH VIRTUAL_ENV

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

step() { echo "test-wheel: [${SECONDS}s] $*" >&2; }
fail() { echo "test-wheel: FAILED: $*" >&2; exit 1; }
# `expect_same WHAT EXPECTED_FILE ACTUAL_FILE`: the two outputs are equal,
# but for the time and process id of mindstudio-probe's log lines.
unstamp() { sed -E 's/^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} \([0-9]+\) //' "$1"; }
expect_same() { diff <(unstamp "$2") <(unstamp "$3") > "$WORK/diff" || { head -20 "$WORK/diff" >&2; fail "$1"; }; }
# `is_ours FILE`: FILE is the msprobe-rs binary, not a Python script.
is_ours() { [ "$(head -c 2 "$1")" != "#!" ]; }
# `logged WHAT CMD...`: runs CMD, its output kept in a log shown only when it fails.
logged() { "${@:2}" > "$WORK/log" 2>&1 || { tail -n 30 "$WORK/log" >&2; fail "$1"; }; }
pip_q() { logged "pip install ${*:2}" "$1/bin/python" -m pip install --quiet --disable-pip-version-check "${@:2}"; }

# ---- maturin, cached ----
TOOLS="$CACHE/wheel-tools"
if [ "$(cat "$TOOLS/.pins" 2>/dev/null)" != "$MATURIN" ]; then
    step "installing $MATURIN into $TOOLS"
    rm -rf "$TOOLS"
    "$PY" -m venv "$TOOLS"
    pip_q "$TOOLS" "$MATURIN"
    echo "$MATURIN" > "$TOOLS/.pins"
fi

# ---- the wheel ----
step "building the wheel (debug profile)"
logged "maturin build" "$TOOLS/bin/maturin" build --profile dev --strip --compatibility pypi --auditwheel check -o "$WORK/dist"
WHEEL="$(ls "$WORK"/dist/msprobe_rs-*.whl)"
case "$(basename "$WHEEL")" in
    *-py3-none-manylinux_*_x86_64.whl | *-py3-none-manylinux_*_aarch64.whl) ;;
    *) fail "the wheel's platform tag is not a manylinux one: $WHEEL" ;;
esac
"$PY" -m zipfile -l "$WHEEL" > "$WORK/listing"
for f in msprobe_rs/__init__.py msprobe_rs/repro/_tables.py msprobe_rs/repro/pytorch_side.py msprobe_rs_route.pth msprobe_rs_route.start _msprobe_rs_route.py "msprobe_rs-$VERSION.data/scripts/msprobe" "msprobe_rs-$VERSION.data/scripts/msprobe-rs"; do
    grep -q "^$f " "$WORK/listing" || fail "the wheel lacks $f"
done

TORCH_SITE="$("$MSPROBE_PYTHON" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
DEPS="$CACHE/wheel-test/probe-deps"
if [ "$(cat "$DEPS/.pins" 2>/dev/null)" != "$PROBE_DEPS" ]; then
    step "installing mindstudio-probe's requirements into $DEPS"
    rm -rf "$DEPS"
    # shellcheck disable=SC2086
    logged "pip install --target $DEPS" "$MSPROBE_PYTHON" -m pip install --quiet --disable-pip-version-check --target "$DEPS" $PROBE_DEPS
    echo "$PROBE_DEPS" > "$DEPS/.pins"
fi
# `fresh NAME`: a new virtual environment.
fresh() { "$PY" -m venv "$WORK/$1" && echo "$WORK/$1"; }
# `lend ENV`: mindstudio-probe's requirements lent to ENV from $DEPS and
# MSPROBE_PYTHON's environment (pip sees them too, so msprobe-rs's numpy
# requirement is met by their numpy 1.26).
lend() {
    "$1/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))' > "$WORK/site"
    printf '%s\n%s\n' "$DEPS" "$TORCH_SITE" > "$(cat "$WORK/site")/zz-lent-requirements.pth"
}
# `probe ENV [PIP_FLAG...]`: mindstudio-probe as pip installs it, its `msprobe` script included.
probe() { pip_q "$1" --no-deps "${@:2}" "$PROBE"; }
# `answers ENV CMD OUT`: CMD's stdout, stderr and exit code in OUT.*.
answers() {
    local env="$1" cmd="$2" out="$3"; shift 3
    set +e
    (cd "$WORK" && "$env/bin/$cmd" "$@" > "$out.stdout" 2> "$out.stderr"; echo $? > "$out.code")
    set -e
}
# The command lines put to mindstudio-probe: `-f pytorch compare --help`
# (its compare options; 7 s of imports, so asked once), `compare` (its
# usage, exit 0), `compare -x -y` (no -f: exit 2).
ask() {
    case "$4" in
        help) answers "$1" "$2" "$3" -f pytorch compare --help ;;
        top) answers "$1" "$2" "$3" compare ;;
        bad) answers "$1" "$2" "$3" compare -x -y ;;
    esac
}
# `their_answers ENV`: mindstudio-probe's own script's answers, before msprobe-rs is installed.
their_answers() {
    for k in help top bad; do ask "$1" msprobe "$WORK/theirs-$k" "$k"; done
    [ "$(cat "$WORK/theirs-help.code")" = 0 ] && grep -q -- "--input_path" "$WORK/theirs-help.stdout" || fail "mindstudio-probe's own compare --help did not answer: $(tail -3 "$WORK/theirs-help.stderr")"
    [ "$(cat "$WORK/theirs-top.code")" = 0 ] && grep -q "mindstudio probe" "$WORK/theirs-top.stdout" || fail "mindstudio-probe's own usage: $(tail -3 "$WORK/theirs-top.stderr")"
    [ "$(cat "$WORK/theirs-bad.code")" = 2 ] || fail "mindstudio-probe's own compare without -f: exit $(cat "$WORK/theirs-bad.code")"
}
# `forwards ENV CMD KIND...`: CMD answers these command lines (help, top,
# bad) as mindstudio-probe's own script did: stdout, stderr, exit code.
forwards() {
    local env="$1" cmd="$2"; shift 2
    for k in "$@"; do ask "$env" "$cmd" "$WORK/ours-$k" "$k"; done
    for k in "$@"; do
        for s in stdout stderr code; do
            expect_same "$cmd ($k): $s differs from mindstudio-probe's own" "$WORK/theirs-$k.$s" "$WORK/ours-$k.$s"
        done
    done
}
# `ours_work ENV CMD`: CMD runs msprobe-rs's op_generate, as the README's
# command line (in a folder holding examples/mindspore): the script it writes
# is msprobe-rs's; and `import msprobe_rs` finds the binary.
ours_work() {
    local case="$WORK/case-$(basename "$1")-$2"
    rm -rf "$case" && mkdir -p "$case/examples" && cp -r "$REPO/examples/mindspore" "$case/examples/"
    (cd "$case" && logged "$2 op_generate in $1" "$1/bin/$2" -f mindspore op_generate -i examples/mindspore/config_op.json -o out)
    grep -q "^wrote out/Mint.matmul.0.backward.py$" "$WORK/log" || fail "$2 op_generate in $1 did not say it wrote the script: $(cat "$WORK/log")"
    grep -qx "Generated by msprobe-rs $VERSION. Edit the call or the inputs below and rerun:" "$case/out/Mint.matmul.0.backward.py" \
        || fail "$2 op_generate in $1: out/Mint.matmul.0.backward.py is not msprobe-rs's script"
    "$1/bin/python" -c 'import msprobe_rs, sys; b = msprobe_rs.find_binary(); sys.exit(b.split("/")[-1] not in ("msprobe", "msprobe-rs"))' || fail "import msprobe_rs / find_binary in $1"
}
# `ours_version ENV CMD`: CMD --version is msprobe-rs's.
ours_version() { "$1/bin/$2" --version | grep -qx "msprobe $VERSION (msprobe-rs)" || fail "$2 --version in $1 does not name msprobe-rs"; }
# `quiet_python ENV`: a plain interpreter of ENV starts without a word on
# stderr and without importing the start-up hook's module.
quiet_python() {
    "$1/bin/python" -c 'import sys; print("_msprobe_rs_route" in sys.modules)' > "$WORK/quiet.out" 2> "$WORK/quiet.err" || fail "python in $1 did not start"
    [ "$(cat "$WORK/quiet.out")" = False ] && [ ! -s "$WORK/quiet.err" ] || fail "python in $1: $(cat "$WORK/quiet.out" "$WORK/quiet.err")"
}
# `not_installed ENV CMD`: CMD says mindstudio-probe is not installed (exit 2).
not_installed() {
    answers "$1" "$2" "$WORK/missing" -f pytorch compare --help
    [ "$(cat "$WORK/missing.code")" = 2 ] && grep -q "is not an msprobe-rs command, and mindstudio-probe .* is not installed" "$WORK/missing.stderr" \
        || fail "$2 compare without mindstudio-probe in $1: exit $(cat "$WORK/missing.code"): $(cat "$WORK/missing.stderr")"
}
# `theirs_module ENV`: `python -m msprobe.msprobe` answers as their script did.
theirs_module() {
    set +e
    (cd "$WORK" && "$1/bin/python" -m msprobe.msprobe compare > "$WORK/module.stdout" 2> "$WORK/module.stderr"; echo $? > "$WORK/module.code")
    set -e
    [ "$(cat "$WORK/module.code")" = 0 ] && grep -q "mindstudio probe" "$WORK/module.stdout" || fail "python -m msprobe.msprobe in $1: exit $(cat "$WORK/module.code"): $(tail -3 "$WORK/module.stderr")"
}
# `uninstalled ENV`: pip uninstall removed every file of msprobe-rs, the
# start-up hook included.
uninstalled() {
    logged "pip uninstall in $1" "$1/bin/python" -m pip uninstall --yes msprobe-rs
    [ ! -e "$1/bin/msprobe-rs" ] || fail "msprobe-rs survived pip uninstall in $1"
    ! "$1/bin/python" -c 'import msprobe_rs' 2>/dev/null || fail "msprobe_rs importable after pip uninstall in $1"
    "$1/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))' > "$WORK/site"
    ! ls -d "$(cat "$WORK/site")"/msprobe_rs* "$(cat "$WORK/site")"/_msprobe_rs* 2>/dev/null || fail "msprobe_rs files left in $1"
}
# `probe_uninstalled ENV`: pip uninstall of mindstudio-probe; msprobe-rs's
# `msprobe-rs` still runs its commands and says mindstudio-probe is gone.
probe_uninstalled() {
    logged "pip uninstall mindstudio-probe in $1" "$1/bin/python" -m pip uninstall --yes mindstudio-probe
    ! "$1/bin/python" -c 'import msprobe.msprobe' 2>/dev/null || fail "msprobe.msprobe importable after pip uninstall mindstudio-probe in $1"
    ours_work "$1" msprobe-rs
    ours_version "$1" msprobe-rs
    not_installed "$1" msprobe-rs
    quiet_python "$1"
}

# ---- alone ----
step "alone: install, commands, script, Rust project, uninstall"
ENV="$(fresh alone)"
pip_q "$ENV" "$WHEEL"
"$ENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))' > "$WORK/site"
is_ours "$ENV/bin/msprobe" || fail "alone: msprobe is not the binary"
for cmd in msprobe msprobe-rs; do ours_work "$ENV" "$cmd" && ours_version "$ENV" "$cmd"; done
not_installed "$ENV" msprobe
quiet_python "$ENV"
# A generated script runs (with the frameworks of MSPROBE_PYTHON).
(cd "$WORK" && logged "alone: pytorch op_generate" "$ENV/bin/msprobe" -f pytorch op_generate -q -i "$REPO/examples/pytorch/config_op.json" -o "$WORK/py")
(cd "$WORK/py" && logged "alone: the generated script did not run" "$MSPROBE_PYTHON" Functional.softmax.0.backward.py)
ls "$WORK"/py/op_result_output/accuracy_checking_result_*.csv > /dev/null || fail "alone: the generated script wrote no CSV"
# A Rust project built away from this clone: the dump copied out, the
# project generated beside it by the installed command (in a stable folder,
# so cargo reuses its build), no path of the clone anywhere in it.
OUT="$CACHE/wheel-test"
# The project folder stays (its build cache), but the generated files go, so
# that only what this run writes can satisfy the checks below.
rm -rf "$OUT/dump" "$OUT/rust"
mkdir -p "$OUT" && cp -r "$REPO/examples/mindspore" "$OUT/dump"
(cd "$OUT" && logged "alone: --lang rust" "$ENV/bin/msprobe" -f mindspore op_generate -q -i dump/config_op.json -o rust --lang rust)
PROJECT="$OUT/rust/Mint.matmul.0.backward"
[ -f "$OUT/rust/msprobe-runtime-$VERSION/src/lib.rs" ] || fail "alone: no runtime crate beside the project"
! grep -rlF "$REPO" "$OUT" || fail "alone: the generated project names this clone"
cp "$REPO/Cargo.lock" "$PROJECT/Cargo.lock"
(cd "$PROJECT" && cargo metadata --offline --format-version 1 > "$WORK/metadata.json") || fail "alone: cargo metadata of the project"
"$PY" - "$WORK/metadata.json" "$REPO" <<'PYEOF' || fail "alone: the project's build reaches into this clone"
import json, sys
meta, repo = json.load(open(sys.argv[1])), sys.argv[2] + "/"
inside = [p["manifest_path"] for p in meta["packages"] if p["manifest_path"].startswith(repo)]
sys.exit(f"packages from the clone: {inside}" if inside else 0)
PYEOF
(cd "$PROJECT" && CARGO_TARGET_DIR="$CARGO_TARGET_DIR/generated-projects" logged "alone: the generated Rust project did not build and run" cargo run --offline --quiet)
ls "$PROJECT"/op_result_output/accuracy_checking_result_*.csv > /dev/null || fail "alone: the Rust project wrote no CSV"
uninstalled "$ENV"
[ ! -e "$ENV/bin/msprobe" ] || fail "alone: msprobe survived pip uninstall"

# ---- mindstudio-probe first, msprobe-rs second: msprobe-rs takes the slot ----
step "mindstudio-probe, then msprobe-rs; uninstall msprobe-rs"
ENV="$(fresh probe-first)"
lend "$ENV"
probe "$ENV"
their_answers "$ENV"
pip_q "$ENV" "$WHEEL"
is_ours "$ENV/bin/msprobe" || fail "probe-first: msprobe is not msprobe-rs after installing it last"
ours_work "$ENV" msprobe
ours_version "$ENV" msprobe
forwards "$ENV" msprobe help top bad
forwards "$ENV" msprobe-rs top bad
quiet_python "$ENV"
# pip deletes the shared msprobe with msprobe-rs; mindstudio-probe's module
# still answers, and reinstalling it gives its script back.
uninstalled "$ENV"
[ ! -e "$ENV/bin/msprobe" ] || fail "probe-first: pip uninstall msprobe-rs should remove the msprobe file it wrote"
theirs_module "$ENV"
probe "$ENV" --force-reinstall
! is_ours "$ENV/bin/msprobe" || fail "probe-first: reinstalling mindstudio-probe did not give msprobe back to it"
forwards "$ENV" msprobe top bad

# ---- msprobe-rs first, mindstudio-probe second: their script takes the slot, our commands stay ours ----
step "msprobe-rs, then mindstudio-probe; uninstall mindstudio-probe"
ENV="$(fresh probe-after)"
lend "$ENV"
pip_q "$ENV" "$WHEEL"
probe "$ENV"
! is_ours "$ENV/bin/msprobe" || fail "probe-after: msprobe should be mindstudio-probe's script after installing it last"
"$ENV/bin/msprobe" --version | grep -q "msprobe(mindstudio probe)" || fail "probe-after: msprobe --version is not mindstudio-probe's answer"
ours_work "$ENV" msprobe
ours_work "$ENV" msprobe-rs
ours_version "$ENV" msprobe-rs
forwards "$ENV" msprobe help top bad
forwards "$ENV" msprobe-rs top bad
quiet_python "$ENV"
# pip deletes the shared msprobe with mindstudio-probe; msprobe-rs still
# answers as msprobe-rs, and reinstalling it gives msprobe back.
probe_uninstalled "$ENV"
[ ! -e "$ENV/bin/msprobe" ] || fail "probe-after: pip uninstall mindstudio-probe should remove the msprobe file it wrote"
pip_q "$ENV" --force-reinstall --no-deps "$WHEEL"
is_ours "$ENV/bin/msprobe" || fail "probe-after: reinstalling msprobe-rs did not give msprobe back to it"
ours_work "$ENV" msprobe
not_installed "$ENV" msprobe
uninstalled "$ENV"
step "ok"
