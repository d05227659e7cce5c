"""A tiny self-attention block in MSAdapter's torch API: reshape/view ops, matmul, softmax, RMS norm.

Inside the step, msprobe's recorded APIs return plain mindspore.Tensors (not mindtorch's), whose
methods are MindSpore's and are not recorded: intermediate values go through torch.* functions
(torch.reshape, torch.permute), Tensor methods are called on the input and the parameters.
torch.transpose / Tensor.transpose is avoided: its backward needs TransposeExt, which this
MindSpore has no CPU kernel for (the step fails under msprobe).

    python mt_attention.py <msprobe-config.json | none>      (see msadapter_common.py)
"""
import math

from msadapter_common import Init, setup, train_step  # first: it makes `torch` MSAdapter's

import torch
import torch.nn.functional as F

BATCH, SEQ, HIDDEN, HEADS = 2, 3, 8, 2
HEAD_DIM = HIDDEN // HEADS


class Attention(torch.nn.Module):
    def __init__(self, init):
        super().__init__()
        self.wqkv = init.param((HIDDEN, 3 * HIDDEN))
        self.wo = init.param((HIDDEN, HIDDEN))
        self.scale = torch.nn.Parameter(torch.ones(HIDDEN))

    def rms_norm(self, x):
        # x is the model's input (a mindtorch Tensor): its methods are MSAdapter's and recorded
        inv = torch.rsqrt(torch.add(x.pow(2).mean(-1, keepdim=True), 1e-6))
        return torch.mul(torch.mul(x, inv), self.scale)

    def forward(self, x):
        h = self.rms_norm(x.view(BATCH, SEQ, HIDDEN))
        qkv = torch.matmul(h, self.wqkv)
        q, k, v = torch.split(qkv, HIDDEN, dim=-1)
        q = torch.permute(torch.reshape(q, (BATCH, SEQ, HEADS, HEAD_DIM)), (0, 2, 1, 3))
        k = torch.permute(torch.reshape(k, (BATCH, SEQ, HEADS, HEAD_DIM)), (0, 2, 3, 1))
        v = torch.permute(torch.reshape(v, (BATCH, SEQ, HEADS, HEAD_DIM)), (0, 2, 1, 3))
        scores = torch.div(torch.matmul(q, k), math.sqrt(HEAD_DIM))
        attn = F.softmax(scores, dim=-1)
        out = torch.permute(torch.matmul(attn, v), (0, 2, 1, 3))
        out = torch.mm(torch.reshape(out, (BATCH * SEQ, HIDDEN)), self.wo.t())
        out = torch.squeeze(torch.unsqueeze(out, 0), 0)
        return x + torch.reshape(out, (BATCH, SEQ, HIDDEN))

def main():
    debugger = setup()
    init = Init(seed=2)
    net = Attention(init)
    x = init.tensor((BATCH, SEQ, HIDDEN))
    target = init.tensor((BATCH, SEQ, HIDDEN))

    def loss_fn(x, target):
        out = net(x)
        return torch.add(F.smooth_l1_loss(out, target), torch.sum(torch.pow(torch.flatten(out), 2)), alpha=1e-3)

    train_step(debugger, net, loss_fn, x, target)


if __name__ == "__main__":
    main()
