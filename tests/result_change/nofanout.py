"""A model without a fan-out (a plain chain of layers, each output used
once) for `msprobe -f pytorch result_change`: no-op hooks cannot change the
accumulation order of any gradient, so no variant changes anything."""

import random
import sys

import numpy as np
import torch
from torch import nn

from msprobe_rs import ResultChange


def main(steps):
    torch.manual_seed(1234)
    random.seed(1234)
    np.random.seed(1234)
    torch.use_deterministic_algorithms(True)
    model = nn.Sequential(nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
    rc = ResultChange(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        inputs = torch.randn(3, 32)
        optimizer.zero_grad()
        loss = model(inputs).sum()
        loss.backward()
        rc.record(loss)
        optimizer.step()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
