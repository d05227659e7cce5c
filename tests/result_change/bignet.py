"""The seed's document 36 (模型计算结果改变原因分析), its BigNet example as a
training script for `msprobe -f pytorch result_change`: seeded, deterministic,
a few SGD steps, with the two ResultChange lines added. net1's output fans
out (to the sum and to net2), so hooks on net2 change the accumulation order
of net1's gradients."""

import os
import random
import sys

import numpy as np
import torch
from torch import nn

from msprobe_rs import ResultChange


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1 = nn.Linear(32, 32)
        self.bn1 = nn.BatchNorm1d(32)
        self.ln2 = nn.Linear(32, 32)

    def forward(self, x):
        x1 = self.ln1(x)

        x2 = self.bn1(x)
        x2 = self.ln2(x2)
        return x1 + x2


class BigNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net1 = Net()
        self.net2 = Net()

    def forward(self, x):
        out1 = self.net1(x)
        out2 = self.net2(out1)
        return out1, out2


def seed_all(seed):
    os.environ["HCCL_DETERMINISTIC"] = "true"
    os.environ["PYTHONHASHSEED"] = str(seed)
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.use_deterministic_algorithms(True)


def main(steps):
    seed_all(1234)
    model = BigNet()
    rc = ResultChange(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        inputs = torch.randn(3, 32)
        optimizer.zero_grad()
        out1, out2 = model(inputs)
        loss = out1.sum() + out2.sum()
        loss.backward()
        rc.record(loss)
        optimizer.step()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
