"""A training script that raises after its first step: `msprobe -f pytorch
result_change` reports the failed command with its output and writes
nothing."""

import torch
from torch import nn

from msprobe_rs import ResultChange


def main():
    torch.manual_seed(1234)
    model = nn.Linear(8, 4)
    rc = ResultChange(model)
    loss = model(torch.randn(2, 8)).sum()
    loss.backward()
    rc.record(loss)
    raise RuntimeError("result_change test: the training script crashed on purpose")


if __name__ == "__main__":
    main()
