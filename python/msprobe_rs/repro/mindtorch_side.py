"""The MSAdapter (mindtorch) side of a script: the tested call runs with
MSAdapter's torch API on MindSpore's device target in the dumped dtype
(backward with mindspore.vjp, see ms_exec: mindtorch 0.4.0's
Tensor.backward() does not work), the bench with the real torch on the CPU
at raised precision (MSAdapter's calls have torch's names and keywords); and
the script's entry point. two_torches binds ``msadapter`` and ``torch``.
"""

import sys

import numpy as np

from .data_generate import Device, DType, Master, MemoryFormat, Size, Unsupported, dtype_info
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
from .two_torches import msadapter

# --- msprobe-rs: the scripts inline this file from here ---


# What each row's Message says was compared.
TESTED_FRAMEWORK, BENCH_FRAMEWORK = "MSAdapter", "torch"
# The op-table prefixes an API's rounding class is looked up with (magnitude.rounding_of):
# MSAdapter's APIs are torch's.
ROUNDING_PREFIXES = ("",)
# Whether the rulebook's reduced_operands (PyTorch's settings: torch_npu's HF32, cuDNN's TF32) apply.
REDUCED_OPERANDS_APPLY = False


def to_msadapter(value):
    """An MSAdapter value from a Master tree: tensors of MSAdapter's class in
    the dumped dtype, its dtypes and sizes; lists stay lists (MSAdapter takes
    torch's arguments)."""
    if isinstance(value, Master):
        canon, _ = dtype_info(value.spec.dtype)
        array = np.array(value.array, order="C")  # np.array keeps 0-d shapes
        if canon == "bfloat16":
            return msadapter.from_numpy(array.astype(np.float32)).to(msadapter.bfloat16)
        return msadapter.from_numpy(array.astype(np.dtype(canon)))
    if isinstance(value, DType):
        return getattr(msadapter, dtype_info(value.name)[0])
    if isinstance(value, Size):
        return msadapter.Size(value.dims)
    if isinstance(value, (Device, MemoryFormat, Unsupported)):
        return None
    if isinstance(value, list):
        return [to_msadapter(v) for v in value]
    if isinstance(value, tuple):
        return tuple(to_msadapter(v) for v in value)
    if isinstance(value, dict):
        return {k: to_msadapter(v) for k, v in value.items()}
    return value


def unavailable(call):
    """Why the tested call cannot run here, or None: MSAdapter runs every call it dumps
    (its NPU calls get no scripts)."""
    return None


def judged_outputs(call, outputs):
    """The outputs of the call that are judged: all of them."""
    return outputs


def run_tested(call, args, kwargs, grad_outputs, device):
    return ms_run(call.tested, args, kwargs, grad_outputs, convert=to_msadapter)


def run_bench(call, args, kwargs, grad_outputs, raise_precision=True):
    return torch_run(call.bench, args, kwargs, grad_outputs, "cpu", raise_precision=raise_precision, exact_op=call.EXACT_OP)


def run(call, argv=None):
    """Runs the script call (its module: the head's inputs(), tested, bench
    and settings) on the MSAdapter side (MSAdapter's torch tested, the real
    torch bench); returns the exit code."""
    return run_script(call, sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(run(sys.modules[__name__]))
