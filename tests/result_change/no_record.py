"""A training script that creates ResultChange but never calls record:
nothing is recorded, which `msprobe -f pytorch result_change` reports as an
error (the two lines of the README were not both added)."""

import torch
from torch import nn

from msprobe_rs import ResultChange


def main():
    torch.manual_seed(1234)
    model = nn.Linear(8, 4)
    ResultChange(model)
    loss = model(torch.randn(2, 8)).sum()
    loss.backward()


if __name__ == "__main__":
    main()
