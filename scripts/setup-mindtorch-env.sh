#!/usr/bin/env bash
# Creates (or reuses) the MSAdapter (mindtorch) test environment: a venv of its own with the one
# MSAdapter/MindSpore pair that imports and computes on the CPU (mindspore-dev 2.6.0.dev20250323,
# mindtorch 0.4.0, numpy 1.26.4; every other distribution pinned too, `pip check` clean), plus
#   - the run-time patches that pair needs (scripts/mindtorch_env/msprobe_rs_mindtorch_patches.py,
#     loaded by a .pth file at interpreter start; see its docstring), and
#   - the real torch for the bench, not installed again: the main environment's torch and what it
#     requires, linked into $VENV/real-torch (scripts/mindtorch_env/link_real_torch.py) and put at
#     the end of sys.path by a .pth file, so `import torch` is the real torch 2.15.0 and
#     `import mindtorch.torch` (or `import torch` with MSAdapter's folder on PYTHONPATH) MSAdapter's.
# The main environment is made first (scripts/setup-python-env.sh). The venv lives outside the
# clone, at $MSPROBE_RS_MINDTORCH_VENV (default: ${XDG_CACHE_HOME:-$HOME/.cache}/msprobe-rs/venv-mindtorch),
# and is reused when its stamp matches; the patches and links are refreshed on every call.
#
#   scripts/setup-mindtorch-env.sh            (same as scripts/setup-python-env.sh --mindtorch)
#
# Prints the path of the MSAdapter environment's python on its last line. MSAdapter's torch
# folder, for the PYTHONPATH way of enabling it (doc 33 §2), is <site-packages>/mindtorch.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
VENV="${MSPROBE_RS_MINDTORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/msprobe-rs/venv-mindtorch}"
PINS="mindspore-dev==2.6.0.dev20250323 mindtorch==0.4.0 numpy==1.26.4 setuptools==84.2.1"
# What pip resolved for PINS on 2026-12-01, pinned so that a new environment is the tested one.
# setuptools: the real torch 2.15.0 requires >= 77.0.3 (a venv of Python 3.11 starts with 65.5.0).
LOCK="asttokens==3.0.2 astunparse==1.6.3 audioread==3.1.0 certifi==2026.10.19.post1 cffi==2.1.1
charset-normalizer==3.5.3 cloudpickle==3.1.3 decorator==5.3.1 dill==0.4.1 idna==3.20 joblib==1.6.0
lazy-loader==0.6 librosa==0.10.2 llvmlite==0.41.1 ml-dtypes==0.2.0 msgpack==1.2.4 numba==0.58.1
packaging==26.4 pillow==13.0.0 platformdirs==4.14.9 pooch==1.9.0 protobuf==7.36.2 psutil==7.2.2
pycparser==3.12 requests==2.34.2 safetensors==0.8.0 scikit-learn==1.2.2 scipy==1.17.1 six==1.17.0
soundfile==0.14.0 soxr==1.1.0 threadpoolctl==3.8.0 tqdm==4.65.0 typing-extensions==4.16.0 urllib3==2.8.0"
STAMP="$VENV/.msprobe-rs-pins"

MAIN_PY=$("$HERE/setup-python-env.sh" | tail -n 1)

if ! [ -x "$VENV/bin/python" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$PINS $LOCK" ]; then
    PY="${PYTHON:-python3}"
    echo "setup-mindtorch-env: creating $VENV with $PINS" >&2
    rm -rf "$VENV"
    mkdir -p "$(dirname "$VENV")"
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip >&2
    # shellcheck disable=SC2086
    "$VENV/bin/python" -m pip install --quiet $PINS $LOCK >&2
    echo "$PINS $LOCK" > "$STAMP"
fi

SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
MAIN_SITE=$("$MAIN_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cp "$HERE/mindtorch_env/msprobe_rs_mindtorch_patches.py" "$SITE/"
echo "import msprobe_rs_mindtorch_patches" > "$SITE/msprobe_rs_mindtorch_patches.pth"
"$VENV/bin/python" "$HERE/mindtorch_env/link_real_torch.py" "$MAIN_SITE" "$VENV/real-torch" >/dev/null
# "zz": .pth files are read in name order; the folder goes after everything the venv has
echo "$VENV/real-torch" > "$SITE/zz_msprobe_rs_real_torch.pth"

"$VENV/bin/python" -m pip check >&2
"$VENV/bin/python" - <<'PY' >&2
import mindspore, mindtorch.torch as mt, numpy, torch
assert type(mt.tensor(0.0)).__module__.startswith("mindtorch"), "mindtorch.torch is not MSAdapter's"
assert not isinstance(torch.tensor(0.0), mindspore.Tensor), "torch is not the real torch"
print("setup-mindtorch-env: mindspore", mindspore.__version__, "mindtorch", mt.__name__,
      "numpy", numpy.__version__, "real torch", torch.__version__)
PY
echo "$VENV/bin/python"
