"""ms_f16_softmax_model: one float16 softmax (forward and backward) under msprobe 26.2.0's
PrecisionDebugger, on MindSpore 2.10's CPU kernels, PyNative.

Usage: python ms_f16_softmax_model.py <msprobe-config.json | none>

Run by make_ms_f16_softmax.sh with msprobe 26.2.0 on PYTHONPATH. The call: ops.softmax(x, -1) of
x[8, 64] float16 (uniform in [-4, 4]); the loss is sum(y * w), w float16 fixed random weights, and
mindspore.value_and_grad takes its gradient with respect to x, so that Functional.softmax.0 gets
a forward and a backward entry. MindSpore's CPU float16 softmax gradient is less accurate than
torch's float16 kernel (about twice the error against a float64 recompute): the fixture on which
the native replay and the generated scripts (`--tested recorded`) must reach the same verdicts
(tests/recorded_scripts.rs).
"""
import sys

import numpy as np
import mindspore as ms
from mindspore import Tensor, mint, ops

SEED = 2026


def main():
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: {sys.argv[0]} <msprobe-config.json | none>")
    config = sys.argv[1]
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")
    ms.set_seed(SEED)
    debugger = None
    if config != "none":
        mint.norm = ops.norm  # msprobe's Norm statistic calls mint.norm, which the CPU build lacks
        from msprobe.mindspore import PrecisionDebugger, seed_all
        seed_all(seed=SEED)
        debugger = PrecisionDebugger(config_path=config)
    rng = np.random.default_rng(SEED)
    x = Tensor(rng.uniform(-4.0, 4.0, (8, 64)).astype(np.float16))
    w = Tensor(rng.uniform(-1.0, 1.0, (8, 64)).astype(np.float16))

    def loss_fn(x):
        return (ops.softmax(x, -1) * w).sum()

    grad_fn = ms.value_and_grad(loss_fn, grad_position=0)
    if debugger is not None:
        debugger.start()
    loss, grad = grad_fn(x)
    if debugger is not None:
        debugger.stop()
        debugger.step()
    print(f"step 0 loss {float(loss.asnumpy()):.6f} grad norm {float(np.linalg.norm(grad.asnumpy().astype(np.float64))):.6f}")


if __name__ == "__main__":
    main()
