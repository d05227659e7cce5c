#!/usr/bin/env bash
# Creates (or reuses) the Python environment the end-to-end tests run generated
# scripts in: pinned torch, mindspore and numpy from PyPI, CPU use, and the
# test-only extras (openpyxl reads the xlsx files the tests write back).
# The environment lives outside the clone, at $MSPROBE_RS_VENV
# (default: $HOME/.cache/msprobe-rs/venv), and is reused when its stamp matches.
# Prints the path of the environment's python on its last line.
set -euo pipefail

VENV="${MSPROBE_RS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/msprobe-rs/venv}"
PINS="torch==2.15.0 mindspore==2.10.0 numpy==1.26.4"
EXTRAS="openpyxl==3.1.5"
STAMP="$VENV/.msprobe-rs-pins"
EXTRAS_STAMP="$VENV/.msprobe-rs-extras"

# The extras are small: an environment with the right frameworks only gets them added.
install_extras() {
    if [ "$(cat "$EXTRAS_STAMP" 2>/dev/null)" != "$EXTRAS" ]; then
        # shellcheck disable=SC2086
        "$VENV/bin/python" -m pip install --quiet $EXTRAS >&2
        echo "$EXTRAS" > "$EXTRAS_STAMP"
    fi
}

if [ -x "$VENV/bin/python" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$PINS" ]; then
    install_extras
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
install_extras
echo "$VENV/bin/python"
