# Sourced by make_mindspore.sh and make_mindtorch.sh: msprobe 26.2.0 in a folder of its own.
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
