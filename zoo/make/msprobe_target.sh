# Sourced by the MindSpore and MSAdapter makers: msprobe 26.2.0 in a folder of its own, the
# makers' environment (ms_make_env) and a tensor fixture from one model run (ms_tensor_fixture).
#
#   ensure_msprobe_26 PYTHON TARGET WHEEL_DIR
#
# installs mindstudio-probe 26.2.0 and the runtime dependencies that the environments lack into
# TARGET with pip --target --no-deps (so msprobe never enters the venv, nor changes its
# mindspore / numpy / torch), unless `from msprobe.mindspore import PrecisionDebugger` of that
# version already works from there; WHEEL_DIR, when it exists, is searched first (--find-links).
MSPROBE_26_VERSION=26.2.0
# What msprobe 26.2.0 imports and the venvs lack, pinned to the versions the zoo was made with.
MSPROBE_26_DEPS=(pandas==2.2.3 python-dateutil==4.0.0 pytz==2026.6 tzdata==2026.6 pyyaml==6.0.4
                 tqdm==4.70.1 matplotlib==3.11.2 pyparsing==3.3.3 cycler==0.12.1 kiwisolver==1.5.1
                 fonttools==4.68.0)
# What msprobe 26.2.0's msprobe.pytorch imports beyond those (bench_functions/npu_fusion_attention.py:
# einops; msprobe/pytorch/__init__.py, through monitor/, torch.utils.tensorboard: tensorboard, absl-py).
MSPROBE_26_PT_EXTRAS=(einops==0.8.2 tensorboard==2.21.0 absl-py==2.5.1)

msprobe_imports() {  # PYTHON TARGET VERSION
    PYTHONPATH=$2 "$1" -c "
import msprobe, importlib.metadata as m
assert m.version('mindstudio-probe') == '$3', m.version('mindstudio-probe')
from msprobe.mindspore import PrecisionDebugger" >/dev/null 2>&1
}

ensure_msprobe_26() {
    local py=$1 target=$2 wheel_dir=$3 links=()
    msprobe_imports "$py" "$target" "$MSPROBE_26_VERSION" && return 0
    echo "installing mindstudio-probe==$MSPROBE_26_VERSION into $target"
    [ -d "$wheel_dir" ] && links=(--find-links "$wheel_dir")
    "$py" -m pip install -q --upgrade --target "$target" --no-deps ${links[@]+"${links[@]}"} \
        "mindstudio-probe==$MSPROBE_26_VERSION" "${MSPROBE_26_DEPS[@]}"
    msprobe_imports "$py" "$target" "$MSPROBE_26_VERSION" ||
        { echo "msprobe $MSPROBE_26_VERSION does not import from $target" >&2; exit 1; }
}

# The makers' environment: CACHE [$MSPROBE_RS_CACHE or ~/.cache/msprobe-rs], PY [$PYTHON or the
# venv's python], TARGET [$MSPROBE_MS_TARGET or msprobe 26.2.0's folder], WHEEL_DIR
# [$MSPROBE_WHEEL_DIR or the cache's wheels].
ms_make_env() {
    CACHE=${MSPROBE_RS_CACHE:-$HOME/.cache/msprobe-rs}
    PY=${PYTHON:-$CACHE/venv/bin/python}
    TARGET=${MSPROBE_MS_TARGET:-$CACHE/msprobe-26.2.0}
    WHEEL_DIR=${MSPROBE_WHEEL_DIR:-$CACHE/wheels}
    export PYTHONDONTWRITEBYTECODE=1
}

# ms_tensor_fixture MODEL CONFIG OUT ROOT: runs `PY MODEL CONFIG` with msprobe 26.2.0 on PYTHONPATH
# in a temporary folder (the config's relative dump_path lands there) and copies the one proc
# folder's dump.json, construct.json, dump_tensor_data/ and stack.json (this machine's repository
# written `<repo>/`, its home folder `~/`) into OUT, refusing absolute paths left in them.
ms_tensor_fixture() {
    local model=$1 config=$2 out=$3 root=$4 work procs src
    work=$(mktemp -d "${TMPDIR:-/tmp}/ms-fixture.XXXXXX")
    if ! (cd "$work" && PYTHONPATH="$TARGET" "$PY" "$model" "$config" >"$work/log" 2>&1); then
        grep -v '^\[WARNING\]' "$work/log" | tail -n 30 >&2
        echo "$model failed" >&2
        rm -rf "$work"
        exit 1
    fi
    grep -h '^impl \|step 0 loss' "$work/log" || true
    procs=("$work"/dump_tensor_L1/step0/proc*)
    [ ${#procs[@]} -eq 1 ] && [ -d "${procs[0]}" ] || { echo "expected one proc folder: ${procs[*]}" >&2; exit 1; }
    src=${procs[0]}
    rm -rf "$out"
    mkdir -p "$out"
    cp "$src/dump.json" "$out/"
    cp -r "$src/dump_tensor_data" "$out/"
    [ -f "$src/construct.json" ] && cp "$src/construct.json" "$out/"
    if [ -f "$src/stack.json" ]; then
        sed -e "s#$root/#<repo>/#g" -e "s#$HOME/#~/#g" "$src/stack.json" >"$out/stack.json"
    fi
    rm -rf "$work"
    if grep -rlF -e "$root/" -e "$HOME/" "$out"/*.json 2>/dev/null; then
        echo "absolute paths left in the files above" >&2
        exit 1
    fi
}
