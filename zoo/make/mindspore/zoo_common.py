"""Shared set-up for the MindSpore zoo models (one training step each, PyNative, CPU).

Every model script is run as

    python ms_<model>.py <msprobe-config.json | none>

`none` runs the step without msprobe (a quick check that the model trains on this CPU build).
With a config, msprobe 26.2.0's PrecisionDebugger (mindstudio-probe from PyPI) dumps the step:
debugger.start() before the step, stop() and step() after it.

msprobe computes the "Norm" statistic with mindspore.mint.norm, whose kernel (LinalgVectorNorm)
is not registered on MindSpore 2.10's CPU backend (the dump dies with "The kernel
LinalgVectorNorm unregistered").  As ../../shared/fixtures/make/ms_tiny_gpt.py --cpu-norm-patch
did for the fixture dumps, setup() replaces mint.norm by ops.norm before msprobe is imported
(msprobe's own files are not modified).  The models do not call mint.norm themselves.

Facts about MindSpore 2.10's CPU build that shaped the models (probe_cpu_ops.py prints them):
- Many of the newer "Ext" kernels behind mint / mint.nn.functional are not registered on CPU
  ("The kernel Conv2DExt unregistered"): mint.{conv2d, arange, outer, tril, stack, full,
  zeros_like, where, topk, sort, argmax, index_select, scatter_add, repeat_interleave, cumsum,
  logsumexp, var, std, norm, baddbmm, addmm} and mint.nn.functional.{conv2d, batch_norm,
  max_pool2d, avg_pool2d, adaptive_avg_pool2d, dropout, gelu, log_softmax, layer_norm,
  embedding, cross_entropy, mse_loss, l1_loss, kl_div, one_hot, pad, leaky_relu, elu, relu6},
  and ops.{rms_norm, layer_norm, embedding, conv_transpose2d}.  The models use the
  mindspore.ops (Functional) or Tensor-method version where the mint one fails.
  PyNative runs asynchronously: a missing kernel is reported at the next synchronisation,
  often by a later, unrelated call, so probe one op per process and sync (asnumpy()).
- In-place Tensor methods (add_, mul_, copy_) silently leave the tensor unchanged on CPU, so
  mint.optim.SGD / Adam do not update parameters there and mint.optim.AdamW has no kernel
  ("The kernel AdamW unregistered").  The models step with mindspore.nn optimizers, and
  ms_transformer_misc writes AdamW out in mint/ops calls (what mint.optim.AdamW computes).
"""
import sys

import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, mint, ops

SEED = 1234


def setup(argv=None):
    """Parse the command line, set PyNative/CPU, create the PrecisionDebugger (or None)."""
    argv = sys.argv if argv is None else argv
    if len(argv) < 2:
        raise SystemExit(f"usage: {argv[0]} <msprobe-config.json | none>")
    config = argv[1]
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")
    if config == "none":
        ms.set_seed(SEED)
        np.random.seed(SEED)
        return None
    mint.norm = ops.norm  # see the module docstring (msprobe's Norm statistic on CPU)
    from msprobe.mindspore import PrecisionDebugger, seed_all
    seed_all(seed=SEED)
    return PrecisionDebugger(config_path=config)


class Init:
    """Deterministic parameter and data factory (numpy, independent of MindSpore's seed)."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)

    def param(self, shape, name, std=None, value=None, requires_grad=True):
        if value is not None:
            arr = np.full(shape, value, np.float32)
        else:
            if std is None:  # fan-in scaling, like the default initialisers
                fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
                std = 1.0 / np.sqrt(max(fan_in, 1))
            arr = (self.rng.standard_normal(shape) * std).astype(np.float32)
        return Parameter(Tensor(arr), name=name, requires_grad=requires_grad)

    def normal(self, shape, dtype=ms.float32, std=1.0):
        return Tensor((self.rng.standard_normal(shape) * std).astype(np.float32), dtype)

    def uniform(self, shape, low=0.0, high=1.0, dtype=ms.float32):
        return Tensor(self.rng.uniform(low, high, shape).astype(np.float32), dtype)

    def integers(self, shape, high, dtype=ms.int32, low=0):
        return Tensor(self.rng.integers(low, high, shape), dtype)


def run_step(debugger, step, name):
    """Run one training step (a callable returning the loss) between start() and stop()."""
    if debugger is not None:
        debugger.start()
    loss = step()
    if debugger is not None:
        debugger.stop()
        debugger.step()
    print(f"{name}: step 0 loss {float(loss.asnumpy()):.6f}", flush=True)
    return loss
