"""A tiny MLP classifier in MSAdapter's torch API: linear, elementwise, norms, softmax, losses.

Inside the step, msprobe's recorded APIs return plain mindspore.Tensors (not mindtorch's), whose
methods and operators are MindSpore's and are not recorded: the model calls torch.* and F.*
functions on intermediate values (torch.add, not `+`).

    python mt_mlp.py <msprobe-config.json | none>      (see msadapter_common.py)
"""
from msadapter_common import Init, setup, train_step  # first: it makes `torch` MSAdapter's

import torch
import torch.nn.functional as F

BATCH, FEATURES, HIDDEN, CLASSES = 4, 6, 8, 3


class MLP(torch.nn.Module):
    def __init__(self, init):
        super().__init__()
        self.w1 = init.param((HIDDEN, FEATURES))
        self.b1 = torch.nn.Parameter(torch.zeros(HIDDEN))
        self.gamma = torch.nn.Parameter(torch.ones(HIDDEN))
        self.beta = torch.nn.Parameter(torch.zeros(HIDDEN))
        self.w2 = init.param((CLASSES, HIDDEN))
        self.b2 = torch.nn.Parameter(torch.zeros(CLASSES))

    def forward(self, x):
        h = F.linear(x, self.w1, self.b1)
        h = F.layer_norm(h, (HIDDEN,), self.gamma, self.beta, 1e-5)
        h = torch.add(F.gelu(h), torch.mul(torch.sigmoid(h), 0.5))
        h = torch.sub(torch.tanh(h), torch.div(torch.abs(h), 4.0))
        h = torch.add(F.relu(h), torch.exp(torch.neg(h)), alpha=0.1)
        return F.linear(h, self.w2, self.b2)


def main():
    debugger = setup()
    init = Init(seed=1)
    net = MLP(init)
    x = init.tensor((BATCH, FEATURES))
    target = torch.tensor([0, 2, 1, 2])
    soft_target = torch.softmax(init.tensor((BATCH, CLASSES)), dim=-1)

    def loss_fn(x, target, soft_target):
        logits = net(x)
        probs = F.softmax(logits, dim=-1)
        loss = F.cross_entropy(logits, target)
        loss = loss + F.mse_loss(probs, soft_target) + F.l1_loss(probs, soft_target) * 0.1
        return loss + F.nll_loss(F.log_softmax(logits, dim=1), target) * 0.5

    train_step(debugger, net, loss_fn, x, target, soft_target)


if __name__ == "__main__":
    main()
