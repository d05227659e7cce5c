"""The MindSpore side of a script: the tested call runs with MindSpore on
its device target in the dumped dtype (backward with mindspore.vjp, see
ms_exec), the bench with torch on the CPU at raised precision (MindSpore's
keyword names renamed to torch's unless the bench is a helper of ms_bench,
which takes MindSpore's own); and the script's entry point.
"""

import sys

from ._tables import KEYWORD_ALIASES
from .ms_bench import TESTED_RUN
from .ms_exec import ms_run
# This side's interface, which run_ut calls as side.<name>: re-exported by name.
from .ms_exec import bench_leaf as bench_leaf
from .ms_exec import reference_is_tested as reference_is_tested
from .ms_exec import reference_leaves as reference_leaves
from .ms_exec import seed_frameworks as seed_frameworks
from .ms_exec import select_device as select_device
from .ms_exec import tested_leaf as tested_leaf
from .run_ut import run_script
from .torch_exec import torch_run

# --- msprobe-rs: the scripts inline this file from here ---


# What each row's Message says was compared.
TESTED_FRAMEWORK, BENCH_FRAMEWORK = "mindspore", "torch"
# The op-table prefixes an API's rounding class is looked up with (magnitude.rounding_of):
# MindSpore's own meanings ("MS.Functional.dense") first, as the op table's lookup does.
ROUNDING_PREFIXES = ("MS.", "")
# Whether the rulebook's reduced_operands (PyTorch's settings: torch_npu's HF32, cuDNN's TF32) apply.
REDUCED_OPERANDS_APPLY = False


def unavailable(call):
    """Why the tested call cannot run here, or None: MindSpore runs every call it dumps."""
    return None


def judged_outputs(call, outputs):
    """The outputs of the call that are judged: all of them."""
    return outputs


def run_tested(call, args, kwargs, grad_outputs, device):
    outputs, grads = ms_run(call.tested, args, kwargs, grad_outputs)
    # What the tested run did, for the bench helpers that follow it (dropout keeps the same elements).
    TESTED_RUN.clear()
    TESTED_RUN.update(args=args, kwargs=kwargs, outputs=outputs, grads=grads)
    return outputs, grads


def run_bench(call, args, kwargs, grad_outputs, raise_precision=True):
    if not call.BENCH_TAKES_MINDSPORE_NAMES:
        kwargs = {KEYWORD_ALIASES.get(k, k): v for k, v in kwargs.items()}
    return torch_run(call.bench, args, kwargs, grad_outputs, "cpu", raise_precision=raise_precision, exact_op=call.EXACT_OP)


def run(call, argv=None):
    """Runs the script call (its module: the head's inputs(), tested, bench
    and settings) on the MindSpore side (MindSpore tested, torch bench); returns the exit code."""
    return run_script(call, sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(run(sys.modules[__name__]))
