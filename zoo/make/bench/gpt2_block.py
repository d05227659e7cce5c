"""One GPT-2-small-sized transformer block at sequence 512, for the real-size benchmark
(scripts/bench-real-size.sh): hidden 768, 12 heads, MLP 3072, pre-norm layer_norm, fused QKV
linear, causal scaled_dot_product_attention, gelu(approximate='tanh'), residual adds, float32.

    python gpt2_block.py <msprobe config.json> <dump_path> [batch]

Run with the real msprobe on PYTHONPATH (zoo/make/make_gpt2_block.sh does). One forward and
backward of the block (loss: mse_loss against a seeded target) is dumped at level L1 after one
undumped warm-up step, so the dump holds every API's inputs, outputs and gradients as tensors.
Everything is seeded (zoo_common.SEED and fixed generators): the same dump on every run.
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pytorch"))
import zoo_common  # noqa: E402

BATCH = int(sys.argv.pop(3)) if len(sys.argv) > 3 else 1
HIDDEN, HEADS, MLP, SEQ = 768, 12, 3072, 512
HEAD_DIM = HIDDEN // HEADS

debugger = zoo_common.setup()


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(HIDDEN)
        self.c_attn = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.c_proj = nn.Linear(HIDDEN, HIDDEN)
        self.ln_2 = nn.LayerNorm(HIDDEN)
        self.c_fc = nn.Linear(HIDDEN, MLP)
        self.mlp_proj = nn.Linear(MLP, HIDDEN)
        for lin in (self.c_attn, self.c_proj, self.c_fc, self.mlp_proj):
            nn.init.normal_(lin.weight, std=0.02)
            nn.init.normal_(lin.bias, std=0.01)

    def attention(self, x):
        b, s, _ = x.shape
        q, k, v = self.c_attn(x).split(HIDDEN, dim=2)
        q, k, v = (t.view(b, s, HEADS, HEAD_DIM).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(b, s, HIDDEN))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


block = Block()
optimizer = torch.optim.SGD(block.parameters(), lr=1e-3)
g = zoo_common.generator()
x = torch.randn(BATCH, SEQ, HIDDEN, generator=g).requires_grad_(True)
target = torch.randn(BATCH, SEQ, HIDDEN, generator=g)


def compute_loss():
    return F.mse_loss(block(x), target)


zoo_common.train_step(debugger, block, optimizer, compute_loss)
