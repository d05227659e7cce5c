"""A matmul with a constant operand in MSAdapter's torch API: torch.matmul(s, torch.ones(3, 2)).

s = torch.tanh(torch.matmul(x, w)) depends on the parameter w; the second operand is a constant
made in the forward (torch.ones, not a Parameter, not requiring grad). MindSpore's autodiff still
returns a gradient for it, a zero placeholder, and msprobe records it as the second backward
output of the matmul (Norm 0.0).

    python mt_constant.py <msprobe-config.json | none>      (see msadapter_common.py)
"""
from msadapter_common import Init, setup, train_step  # first: it makes `torch` MSAdapter's

import torch

BATCH, FEATURES, OUT = 4, 3, 2


class Constant(torch.nn.Module):
    def __init__(self, init):
        super().__init__()
        self.w = init.param((FEATURES, FEATURES))

    def forward(self, x):
        s = torch.tanh(torch.matmul(x, self.w))
        return torch.matmul(s, torch.ones(FEATURES, OUT))


def main():
    debugger = setup()
    init = Init(seed=3)
    net = Constant(init)
    # std 0.5: |x @ w| < 2.5, where this MindSpore's CPU tanh agrees with torch's to 2e-7
    # (it drifts from |x| ~ 3 on: 9e-5 at 4.9, over check_forward.py's 1e-5)
    x = init.tensor((BATCH, FEATURES), std=0.5)

    def loss_fn(x):
        return torch.sum(net(x))

    train_step(debugger, net, loss_fn, x)


if __name__ == "__main__":
    main()
