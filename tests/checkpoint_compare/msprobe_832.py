"""msprobe 8.3.2's own checkpoint compare on pairs of checkpoints written by
make_checkpoints.py: the oracle of tests/checkpoint_compare.rs, every pair
in one process.

    PYTHONPATH=<msprobe 8.3.2> python msprobe_832.py WORK CKPT1 CKPT2 [CKPT1 CKPT2 ...]

Prints a JSON list, per pair:
  "compare": what 8.3.2's compare_checkpoints writes for the two folders
             ({name: {l2, cos, numel, shape}}; its confirmation prompt
             answered yes, `megatron` stubbed as make_checkpoints.py does);
  "functions": 8.3.2's metric functions (METRIC_FUNC: l2, cos, numel,
             shape) on the two folders' unsharded models (full.pt) in
             float64, keyed by the names the compare reports, in model
             order; null when a folder has no full.pt.
"""

import builtins
import contextlib
import io
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_checkpoints  # noqa: E402  (the megatron stub the pickles name)
from msprobe.core.config_check.ckpt_compare.ckpt_comparator import compare_checkpoints  # noqa: E402
from msprobe.core.config_check.ckpt_compare.metrics import METRIC_FUNC  # noqa: E402


def functions(a, b):
    full_a, full_b = (os.path.join(x, "full.pt") for x in (a, b))
    if not (os.path.isfile(full_a) and os.path.isfile(full_b)):
        return None
    sa, sb = torch.load(full_a), torch.load(full_b)
    result = []
    for name in sa:
        if name in sb:
            x, y = (t.float().numpy().astype(np.float64) for t in (sa[name], sb[name]))
            result.append([make_checkpoints.mapped(name), {m: f(x, y) for m, f in METRIC_FUNC.items()}])
    return result


def main():
    work, pairs = sys.argv[1], sys.argv[2:]
    builtins.input = lambda prompt="": "y"
    answers = []
    for i in range(0, len(pairs), 2):
        a, b = pairs[i], pairs[i + 1]
        out = os.path.join(work, f"msprobe_832_{i // 2}.json")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            compare_checkpoints(a, b, out)
        with open(out) as f:
            answers.append({"compare": json.load(f), "functions": functions(a, b)})
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    main()
