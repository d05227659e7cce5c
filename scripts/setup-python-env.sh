#!/usr/bin/env bash
# Creates (or reuses) the Python environment the end-to-end tests run generated
# scripts in: pinned torch, mindspore and numpy from PyPI, CPU use, and the
# test-only extras (openpyxl reads the xlsx files the tests write back; ruff
# lints and pytest tests the Python package, with their dependencies), and
# msprobe 8.3.2 itself from PyPI with its pure-Python dependencies, in a
# folder of its own ($MSPROBE_832, default beside the environment) that tests
# put on PYTHONPATH to check compatibility with packs msprobe writes, and
# msprobe 26.2.0 beside it (zoo/make/msprobe_target.sh, with what its
# PyTorch bench functions import in msprobe-26.2.0-pytorch), whose CPU
# references of torch_npu's fused kernels are an oracle of
# runtime/tests/npu/oracles.py; the set-up ends with an import check of each
# bench module the tests use, which fails in one line naming what is missing.
# The environment lives outside the clone, at $MSPROBE_RS_VENV
# (default: $HOME/.cache/msprobe-rs/venv), and is reused when its stamp matches.
# Prints the path of the environment's python on its last line.
#
#   scripts/setup-python-env.sh               the environment of the tests (all of the above)
#   scripts/setup-python-env.sh --main        what the main job needs only: the pinned frameworks
#                                             (scripts/run-example.sh); no test extras, no msprobe
#   scripts/setup-python-env.sh --mindtorch   the MSAdapter (mindtorch) test environment as well
#                                             (scripts/setup-mindtorch-env.sh): prints its python
set -euo pipefail

MAIN_ONLY=
case "${1:-}" in
    --mindtorch) exec "$(dirname "$0")/setup-mindtorch-env.sh" ;;
    --main) MAIN_ONLY=1 ;;
esac

VENV="${MSPROBE_RS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/msprobe-rs/venv}"
PINS="torch==2.15.0 mindspore==2.10.0 numpy==1.26.4"
EXTRAS="openpyxl==3.1.5 ruff==0.15.0 pytest==9.2.0 pluggy==1.7.0 iniconfig==2.3.1 packaging==26.4 pygments==2.21.0"
STAMP="$VENV/.msprobe-rs-pins"
EXTRAS_STAMP="$VENV/.msprobe-rs-extras"

MSPROBE_832="${MSPROBE_832:-$(dirname "$VENV")/msprobe-8.3.2}"
MSPROBE_832_PKGS="mindstudio-probe==8.3.2 pandas==2.0.3 python-dateutil==4.0.0 pytz==2026.6 tzdata==2026.6 pyyaml==6.0.4 tqdm==4.70.1 matplotlib==3.11.2 pyparsing==3.3.3 cycler==0.12.1 kiwisolver==1.5.1 fonttools==4.68.0 openpyxl==3.1.5 et_xmlfile==2.0.0 einops==0.8.2 tensorboard==2.21.0 absl-py==2.5.1 tabulate==0.10.0"

# msprobe 8.3.2 without dependencies, so pip never brings a second torch or numpy
# (tabulate: its generated MindSpore scripts import it; tests/op_generate_832.rs runs them).
install_msprobe_832() {
    if ! PYTHONPATH="$MSPROBE_832" "$VENV/bin/python" -c 'import msprobe.core.config_check, yaml, pandas, tabulate' >/dev/null 2>&1; then
        echo "setup-python-env: installing msprobe 8.3.2 into $MSPROBE_832" >&2
        # shellcheck disable=SC2086
        "$VENV/bin/python" -m pip install --quiet --no-deps --upgrade --target "$MSPROBE_832" $MSPROBE_832_PKGS >&2
    fi
}

# msprobe 26.2.0, and in a folder beside it what its msprobe.pytorch imports and the venv lacks
# (MSPROBE_26_PT_EXTRAS of zoo/make/msprobe_target.sh, pinned there); then the import
# check of every bench module the tests use (runtime/tests/npu/msprobe26.py) with `python -I` and
# only those two folders: a missing package fails the set-up here, in one line that names it.
install_msprobe_26() {
    local target extra stamp
    target="$(dirname "$VENV")/msprobe-26.2.0"
    extra="$(dirname "$VENV")/msprobe-26.2.0-pytorch"
    stamp="$extra/.msprobe-rs-extras"
    # shellcheck source=zoo/make/msprobe_target.sh
    . "$(dirname "$0")/../zoo/make/msprobe_target.sh"
    ensure_msprobe_26 "$VENV/bin/python" "$target" "$(dirname "$VENV")/wheels" >&2
    if [ "$(cat "$stamp" 2>/dev/null)" != "${MSPROBE_26_PT_EXTRAS[*]}" ]; then
        "$VENV/bin/python" -m pip install --quiet --no-deps --upgrade --target "$extra" "${MSPROBE_26_PT_EXTRAS[@]}" >&2
        echo "${MSPROBE_26_PT_EXTRAS[*]}" > "$stamp"
    fi
    check_msprobe_26 "$target" "$extra"
}

# The one-line import check of msprobe 26.2.0's bench functions (runtime/tests/npu/msprobe26.py).
check_msprobe_26() {
    local failure
    if ! failure=$("$VENV/bin/python" -I "$(dirname "$0")/../runtime/tests/npu/msprobe26.py" "$1" "$2" 2>&1 >/dev/null); then
        echo "setup-python-env: ${failure##*$'\n'}" >&2
        exit 1
    fi
}

# The extras are small: an environment with the right frameworks only gets them added.
install_extras() {
    if [ "$(cat "$EXTRAS_STAMP" 2>/dev/null)" != "$EXTRAS" ]; then
        # shellcheck disable=SC2086
        "$VENV/bin/python" -m pip install --quiet $EXTRAS >&2
        echo "$EXTRAS" > "$EXTRAS_STAMP"
    fi
}

# The test command's additions: the test extras and the msprobe oracles.
install_test_parts() {
    if [ -z "$MAIN_ONLY" ]; then
        install_extras
        install_msprobe_832
        install_msprobe_26
    fi
}

if [ -x "$VENV/bin/python" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$PINS" ]; then
    install_test_parts
    echo "$VENV/bin/python"
    exit 0
fi

PY="${PYTHON:-python3}"
echo "setup-python-env: creating $VENV with $PINS" >&2
rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip >&2
# shellcheck disable=SC2086
"$VENV/bin/python" -m pip install --quiet $PINS >&2
"$VENV/bin/python" - <<'PY' >&2
import torch, mindspore, numpy
print("torch", torch.__version__, "mindspore", mindspore.__version__, "numpy", numpy.__version__)
PY
echo "$PINS" > "$STAMP"
install_test_parts
echo "$VENV/bin/python"
