"""A training script seeded from the clock (a seed not fixed): two runs
differ, so `msprobe -f pytorch result_change` reports it as not
reproducible and judges nothing else."""

import time

import torch
from torch import nn

from msprobe_rs import ResultChange


def main():
    torch.manual_seed(time.time_ns())
    model = nn.Linear(8, 4)
    rc = ResultChange(model)
    loss = model(torch.randn(2, 8)).sum()
    loss.backward()
    rc.record(loss)


if __name__ == "__main__":
    main()
