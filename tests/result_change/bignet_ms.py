"""The seed's document 36 BigNet written for MindSpore (PyNative): the same
structure with mindspore.nn (Dense, BatchNorm1d), seeded, a few SGD steps,
gradients from mindspore.value_and_grad over the trainable parameters, and
the two ResultChange lines. net1's output fans out (to the sum and to
net2), so a Cell backward hook on net2 changes the accumulation order of
net1's gradients, as in PyTorch."""

import sys

import numpy as np
import mindspore as ms
from mindspore import nn

from msprobe_rs import ResultChange


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.Dense(32, 32)
        self.bn1 = nn.BatchNorm1d(32)
        self.ln2 = nn.Dense(32, 32)

    def construct(self, x):
        x1 = self.ln1(x)
        x2 = self.bn1(x)
        x2 = self.ln2(x2)
        return x1 + x2


class BigNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.net1 = Net()
        self.net2 = Net()

    def construct(self, x):
        out1 = self.net1(x)
        out2 = self.net2(out1)
        return out1, out2


def main(steps):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(1234)
    np.random.seed(1234)
    net = BigNet()
    rc = ResultChange(net)
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.01)

    def forward(x):
        out1, out2 = net(x)
        return out1.sum() + out2.sum()

    value_and_grad = ms.value_and_grad(forward, None, net.trainable_params())
    for _ in range(steps):
        inputs = ms.Tensor(np.random.randn(3, 32).astype(np.float32))
        loss, grads = value_and_grad(inputs)
        rc.record(loss, grads)
        optimizer(grads)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
