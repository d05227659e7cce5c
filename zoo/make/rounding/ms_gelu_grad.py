"""Case (d) of issue 21: MindSpore's CPU `gelu` gradient near x = -0.75 (msprobe 26.2.0, MindSpore 2.10).

The gradient of gelu is Phi(x) + x*phi(x), whose two terms cancel near x = -0.7518 (Phi = 0.226,
x*phi = -0.226): MindSpore's CPU kernel evaluates that formula in float32 and its result there is
off by many ULP of the small gradient, as any kernel computing the formula is. x is 64 values on
[-0.79, -0.71] and 64 ordinary ones on [-3, 3]; the loss is gelu(x).sum(), so the recorded input
gradient of `Functional.gelu` is MindSpore's gelu' itself (times an incoming gradient of ones).

    python ms_gelu_grad.py <msprobe-config.json | none>      (PYTHONPATH: msprobe, zoo/make/mindspore)
"""
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

from zoo_common import run_step, setup

debugger = setup()

values = np.concatenate([np.linspace(-0.79, -0.71, 64), np.linspace(-3.0, 3.0, 64)]).astype(np.float32)


class Gelu(nn.Cell):
    def __init__(self):
        super().__init__()
        self.x = Parameter(Tensor(values), name="x")

    def construct(self):
        return ops.gelu(self.x).sum()


net = Gelu()
grad_fn = ms.value_and_grad(net, None, net.trainable_params())


def step():
    loss, _ = grad_fn()
    return loss


run_step(debugger, step, "ms_gelu_grad")
