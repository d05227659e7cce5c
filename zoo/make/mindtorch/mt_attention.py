"""A tiny self-attention block in MSAdapter's torch API: reshape/view ops, matmul, softmax, RMS norm.

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
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.scale

    def forward(self, x):
        h = self.rms_norm(x)
        qkv = torch.matmul(h, self.wqkv)
        q, k, v = torch.split(qkv, HIDDEN, dim=-1)
        q = q.reshape(BATCH, SEQ, HEADS, HEAD_DIM).permute(0, 2, 1, 3)
        k = k.view(BATCH, SEQ, HEADS, HEAD_DIM).permute(0, 2, 3, 1)
        v = v.reshape(BATCH, SEQ, HEADS, HEAD_DIM).permute(0, 2, 1, 3)
        scores = torch.matmul(q, k) / math.sqrt(HEAD_DIM)
        attn = F.softmax(scores, dim=-1)
        out = torch.matmul(attn, v).permute(0, 2, 1, 3).contiguous().view(BATCH, SEQ, HIDDEN)
        out = torch.mm(out.reshape(BATCH * SEQ, HIDDEN), self.wo).unsqueeze(0)
        return x + out.squeeze(0).reshape(BATCH, SEQ, HIDDEN)


def main():
    debugger = setup()
    init = Init(seed=2)
    net = Attention(init)
    x = init.tensor((BATCH, SEQ, HIDDEN))
    target = init.tensor((BATCH, SEQ, HIDDEN))

    def loss_fn(x, target):
        out = net(x)
        return F.smooth_l1_loss(out, target) + torch.flatten(out).pow(2).sum() * 1e-3

    train_step(debugger, net, loss_fn, x, target)


if __name__ == "__main__":
    main()
