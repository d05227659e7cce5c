"""ms_small_net: a small mindspore.nn.Cell network, one seeded training step dumped at level "mix".

Usage: python ms_small_net.py <msprobe-config.json | none>

MindSpore 2.10, PyNative, CPU. Cells: SmallNet (root) > fc1 (nn.Dense), block (Block: proj
nn.Dense and a mixing Parameter), head (nn.Dense). Ops, all with CPU kernels in this build:
nn.Dense (MatMul/BiasAdd), ops.relu, mint.nn.functional.relu, ops.matmul, ops.softmax, a Tensor
__add__ residual, ops.log_softmax, Tensor __mul__/sum/mean for the NLL loss (one-hot labels),
mindspore.value_and_grad over the network's trainable parameters, nn.SGD.
With a config, msprobe 26.2.0's PrecisionDebugger dumps the step: start(net) (level mix needs the
model), stop(), step().  mint.norm is replaced by ops.norm before msprobe is imported (msprobe's
Norm statistic; LinalgVectorNorm has no CPU kernel), as zoo/make/mindspore/zoo_common.py does.
"""
import sys

import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, mint, nn, ops
import mindspore.mint.nn.functional as F

SEED = 1234
BATCH, DIN, HID, CLASSES = 4, 8, 16, 5

if len(sys.argv) < 2:
    raise SystemExit(f"usage: {sys.argv[0]} <msprobe-config.json | none>")
ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
debugger = None
if sys.argv[1] == "none":
    ms.set_seed(SEED)
    np.random.seed(SEED)
else:
    mint.norm = ops.norm
    from msprobe.mindspore import PrecisionDebugger, seed_all
    seed_all(seed=SEED)
    debugger = PrecisionDebugger(config_path=sys.argv[1])

rng = np.random.default_rng(10)


def tensor(shape, std=1.0):
    return Tensor((rng.standard_normal(shape) * std).astype(np.float32))


def dense(cin, cout):
    return nn.Dense(cin, cout, weight_init=tensor((cout, cin), 1 / np.sqrt(cin)),
                    bias_init=Tensor(np.full((cout,), 0.01, np.float32)))


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.proj = dense(HID, HID)
        self.mix = Parameter(tensor((HID, HID), 1 / np.sqrt(HID)), name="block.mix")

    def construct(self, x):
        h = F.relu(self.proj(x))
        attn = ops.softmax(ops.matmul(h, self.mix), axis=-1)
        return x + attn * h


class SmallNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = dense(DIN, HID)
        self.block = Block()
        self.head = dense(HID, CLASSES)

    def construct(self, x):
        x = ops.relu(self.fc1(x))
        x = self.block(x)
        return ops.log_softmax(self.head(x), axis=-1)


net = SmallNet()
opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
x = tensor((BATCH, DIN))
labels = rng.integers(0, CLASSES, BATCH)
onehot = Tensor(np.eye(CLASSES, dtype=np.float32)[labels])


def forward(inp, target):
    logp = net(inp)
    return -(logp * target).sum(axis=1).mean()


grad_fn = ms.value_and_grad(forward, None, opt.parameters)

if debugger is not None:
    debugger.start(net)
loss, grads = grad_fn(x, onehot)
opt(grads)
if debugger is not None:
    debugger.stop()
    debugger.step()
print(f"ms_small_net: step 0 loss {float(loss.asnumpy()):.6f}", flush=True)
