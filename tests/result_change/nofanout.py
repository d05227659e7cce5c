"""A model without a fan-out (a plain chain of layers, each output used
once) for `msprobe -f pytorch result_change`: no-op hooks cannot change the
accumulation order of any gradient, so no variant changes anything. Its
seeding, chain and training loop serve the other scripts too."""

import random
import sys

import numpy as np
import torch
from torch import nn

from msprobe_rs import ResultChange


def seeded():
    torch.manual_seed(1234)
    random.seed(1234)
    np.random.seed(1234)
    torch.use_deterministic_algorithms(True)


def chain():
    return nn.Sequential(nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))


def train(model, steps, inputs=lambda: torch.randn(3, 32), backward=lambda loss: loss.backward()):
    """SGD steps of `model` on `inputs()`, each recorded after `backward(loss)`."""
    rc = ResultChange(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        x = inputs()
        optimizer.zero_grad()
        loss = model(x).sum()
        backward(loss)
        rc.record(loss)
        optimizer.step()


def main(steps):
    seeded()
    train(chain(), steps)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
