"""Where the tests find msprobe 26.2.0's PyTorch bench functions, which of
them they import, and the import check that scripts/setup-python-env.sh runs
at the end of its set-up (so that a package the oracle needs and the set-up
did not install fails the set-up in one line, not a test later).

msprobe 26.2.0 is found at $MSPROBE_26 (default: msprobe-26.2.0 beside the
test Python's environment, where scripts/setup-python-env.sh installs it)
with what its msprobe.pytorch imports beyond it (einops, tensorboard,
absl-py) at $MSPROBE_26_PT_EXTRA (default: msprobe-26.2.0-pytorch beside it).

Used by runtime/tests/npu/oracles.py and runtime/tests/npu_misc/reference.py.

Usage (the set-up's check; run it with `python -I`, so that only the two
folders given are searched beyond the interpreter's own):

    python -I msprobe26.py MSPROBE_26 MSPROBE_26_PT_EXTRA
"""

import importlib
import os
import sys
from pathlib import Path

# Every module of msprobe/pytorch/bench_functions/ that a test imports.
MODULES = (
    "apply_adam",
    "apply_adam_w",
    "confusion_transpose",
    "fast_gelu",
    "group_norm_silu",
    "layer_norm_eval",
    "linear",
    "matmul_backward",
    "mish",
    "moe_gating_top_k_softmax",
    "npu_fusion_attention",
    "rms_norm",
    "rotary_mul",
    "scaled_mask_softmax",
    "sort_v2",
    "swiglu",
)


def paths():
    """[msprobe 26.2.0's folder, its PyTorch extras' folder], from the
    environment or beside the test Python's environment."""
    cache = Path(sys.executable).parents[2]
    root = Path(os.environ.get("MSPROBE_26", cache / "msprobe-26.2.0"))
    extra = Path(os.environ.get("MSPROBE_26_PT_EXTRA", cache / "msprobe-26.2.0-pytorch"))
    if not (root / "msprobe" / "pytorch" / "bench_functions" / "fusion_operator_config.yaml").is_file():
        raise SystemExit(f"msprobe 26.2.0 not found at {root} (set MSPROBE_26; scripts/setup-python-env.sh installs it)")
    return [str(root), str(extra)]


def bench(module):
    """One module of msprobe 26.2.0's bench functions (not the package's
    __init__, which imports every module); only those in MODULES, which the
    set-up checks."""
    if module not in MODULES:
        raise KeyError(f"bench_functions.{module} is not in MODULES of {__file__}: add it, so the set-up checks it")
    return importlib.import_module(f"msprobe.pytorch.bench_functions.{module}")


def check(root, extra):
    """Imports every module of MODULES from root and extra; the first
    failure as one line (naming the missing package), else None."""
    sys.path[len(sys.path):] = [root, extra]
    for module in MODULES:
        try:
            importlib.import_module(f"msprobe.pytorch.bench_functions.{module}")
        except Exception as exc:  # noqa: BLE001 - any failure is the one line
            return f"msprobe 26.2.0's bench_functions.{module} does not import from {root} + {extra}: {type(exc).__name__}: {exc}"
    return None


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__.strip().splitlines()[-1].strip())
    failure = check(sys.argv[1], sys.argv[2])
    if failure:
        print(failure, file=sys.stderr)
        sys.exit(1)
