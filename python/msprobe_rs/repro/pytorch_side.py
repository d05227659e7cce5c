"""The PyTorch side of a script: the tested call runs with torch on the
device (CUDA, else NPU, else CPU) in the dumped dtype, the bench with torch
on the CPU at raised precision; and the script's entry point.
"""

import sys

import torch

from .compare import run_side
from .npu_bench import JUDGED_OUTPUTS
from .run_ut import run_script
from .torch_exec import torch_leaf, torch_run

try:
    import torch_npu  # noqa: F401  (registers the NPU device on Ascend)
except ImportError:
    torch_npu = None

# --- msprobe-rs: the scripts inline this file from here ---


# What each row's Message says was compared.
TESTED_FRAMEWORK, BENCH_FRAMEWORK = "torch", "torch"
# The op-table prefixes an API's rounding class is looked up with (magnitude.rounding_of).
ROUNDING_PREFIXES = ("",)
# Whether the rulebook's reduced_operands (PyTorch's settings: torch_npu's HF32, cuDNN's TF32) apply.
REDUCED_OPERANDS_APPLY = True


def unavailable(call):
    """Why the tested call cannot run here, or None: an NPU call needs torch_npu."""
    if call.API_OP.startswith("NPU.") and torch_npu is None:
        return "torch_npu is not installed (the tested call is torch_npu's, on an Ascend NPU)"
    return None


def select_device(requested):
    if requested:
        return requested
    if torch.cuda.is_available():
        return "cuda"
    if torch_npu is not None and torch.npu.is_available():
        return "npu"
    return "cpu"


def judged_outputs(call, outputs):
    """The outputs of the call that are judged: an NPU call's first JUDGED_OUTPUTS (what
    torch_npu returns, and msprobe records, beyond them is not)."""
    prefix, _, op = call.API_OP.partition(".")
    return outputs[:JUDGED_OUTPUTS[op]] if prefix == "NPU" and op in JUDGED_OUTPUTS else outputs


def run_tested(call, args, kwargs, grad_outputs, device):
    outputs, grads = torch_run(call.tested, args, kwargs, grad_outputs, device, raise_precision=False, exact_op=call.EXACT_OP)
    return judged_outputs(call, outputs), grads


def run_bench(call, args, kwargs, grad_outputs, raise_precision=True):
    return torch_run(call.bench, args, kwargs, grad_outputs, "cpu", raise_precision=raise_precision, exact_op=call.EXACT_OP)


def reference_is_tested(device):
    """Whether the api standard's reference run (the CPU in the dumped dtype)
    is the tested run itself."""
    return torch.device(device).type == "cpu"


def reference_leaves(call, args, kwargs, grad_outputs, device, tested_leaves):
    """The api standard's reference: the tested function on the CPU in the
    dumped dtype; the tested run itself on a CPU device; (None, None) when
    the CPU run raises."""
    if reference_is_tested(device):
        return tested_leaves
    leaves, _ = run_side(lambda: seed_frameworks(call.RANDOM_SEED), run_tested, tested_leaf, call, args, kwargs,
                         grad_outputs, "cpu")
    return leaves


def tested_leaf(value):
    return torch_leaf(value)


def bench_leaf(value):
    return torch_leaf(value)


def seed_frameworks(seed):
    torch.manual_seed(seed)


def run(call, argv=None):
    """Runs the script call (its module: the head's inputs(), tested, bench
    and settings) on the PyTorch side (torch tested on the device); returns the exit code."""
    return run_script(call, sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(run(sys.modules[__name__]))
