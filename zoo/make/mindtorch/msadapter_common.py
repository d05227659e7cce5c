"""Shared set-up for the MSAdapter (mindtorch) models: one training step each, PyNative, CPU.

Every model script is run by ../make_mindtorch.sh as

    PYTHONPATH=<msprobe>:stubs:. python mt_<model>.py <msprobe-config.json | none>

in the MSAdapter test environment (scripts/setup-mindtorch-env.sh, whose run-time patches make
mindtorch 0.4.0 work on mindspore-dev 2.6.0.dev20250323). Importing this module first enables
MSAdapter the way mindtorch 0.4.0 provides (`from mindtorch.tools import mstorch_enable`: its import
hook makes `torch` and every `torch.*` the `mindtorch.torch` modules), so that `import torch` in the
models is MSAdapter's torch; msprobe (8.3.2 or 26.2.0) is imported after it and then dumps
`"framework": "mindtorch"`. `none` runs the step without msprobe.

Not through PYTHONPATH=<site-packages>/mindtorch (doc 33's way, for the newer MSAdapter): with
mindtorch 0.4.0, `import torch.nn.functional` then loads a second copy of `torch.nn` (its
`__init__` imports `mindtorch.torch.nn`, but the submodules load again under `torch.nn.*`), whose
`Parameter` class the Module does not recognise: the models would have no parameters.

Two things only the dumping needs, done here before msprobe is imported (msprobe's files are
not modified):
- msprobe's "Norm" statistic calls mindspore.mint.norm, which has no LinalgVectorNorm kernel on
  this CPU build: a numpy L2 norm takes its place;
- msprobe imports torch_npu in MSAdapter mode: stubs/torch_npu is an empty stand-in.

Tensor.backward() does not work on mindtorch 0.4.0; the step's gradients come from
mindspore.value_and_grad over the model's trainable parameters, between debugger.start(model=net)
and debugger.stop(), debugger.step(), as for a MindSpore model.
"""
import sys

import mindspore as ms
import numpy as np
from mindspore import mint

from mindtorch.tools import mstorch_enable  # noqa: F401  (before `import torch`, see above)
import torch

SEED = 1234


def _numpy_norm(data, *args, **kwargs):
    return ms.Tensor(np.linalg.norm(data.asnumpy().astype(np.float64)), ms.float32)


def setup(argv=None):
    """Check that torch is MSAdapter's, set PyNative/CPU, create the PrecisionDebugger (or None)."""
    argv = sys.argv if argv is None else argv
    if len(argv) < 2:
        raise SystemExit(f"usage: {argv[0]} <msprobe-config.json | none>")
    if not isinstance(torch.tensor(0.0), ms.Tensor):
        raise SystemExit(f"torch is not MSAdapter's ({torch.__file__}): put its folder on PYTHONPATH")
    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    ms.set_seed(SEED)
    if argv[1] == "none":
        return None
    mint.norm = _numpy_norm
    from msprobe.mindspore import PrecisionDebugger
    return PrecisionDebugger(config_path=argv[1])


class Init:
    """Deterministic parameters and data (numpy, independent of MindSpore's seed)."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)

    def array(self, shape, std=1.0):
        return (self.rng.standard_normal(shape) * std).astype(np.float32)

    def param(self, shape, std=None):
        if std is None:
            std = 1.0 / np.sqrt(shape[-1])
        return torch.nn.Parameter(torch.tensor(self.array(shape, std)))

    def tensor(self, shape, std=1.0):
        return torch.tensor(self.array(shape, std))


def train_step(debugger, net, loss_fn, *inputs):
    """One step of loss_fn(*inputs) and its gradients with respect to net's parameters, dumped."""
    grad_fn = ms.value_and_grad(loss_fn, None, net.trainable_params())
    if debugger is not None:
        debugger.start(model=net)
    loss, grads = grad_fn(*inputs)
    if debugger is not None:
        debugger.stop()
        debugger.step()
    norms = [float(np.linalg.norm(g.asnumpy())) for g in grads]
    print(f"step 0 loss {float(loss.asnumpy()):.6f}, {len(grads)} gradients, "
          f"norms {' '.join(f'{n:.4f}' for n in norms)}")
