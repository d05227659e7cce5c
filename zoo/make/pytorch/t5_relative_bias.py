"""T5-style attention with relative position buckets: the bucket function of HF T5
(gt/lt comparisons, abs, log, integer arithmetic, min/max, where, full_like, zeros_like),
bucket embeddings added to the attention scores, T5's RMS layer norm (pow/mean/rsqrt), an
encoder self-attention (bidirectional buckets) and a decoder self-attention (causal buckets).

Loss: mse_loss (regression head). Optimizer: Adafactor (T5's optimizer, foreach=False).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import zoo_common

debugger = zoo_common.setup()

VOCAB, HIDDEN, HEADS, SEQ, BATCH = 32, 16, 2, 8, 2
HEAD_DIM = HIDDEN // HEADS
NUM_BUCKETS, MAX_DISTANCE = 8, 16


def relative_position_bucket(relative_position, bidirectional, num_buckets=NUM_BUCKETS, max_distance=MAX_DISTANCE):
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = torch.max(torch.neg(relative_position), torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    # log(0) = -inf for the small positions; those lanes are discarded by the where below (as in HF T5)
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).to(torch.long)
    relative_position_if_large = torch.min(
        relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1)
    )
    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets


class T5LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


class SelfAttention(nn.Module):
    def __init__(self, bidirectional):
        super().__init__()
        self.bidirectional = bidirectional
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN, bias=False)  # T5's q/k/v, fused to keep the dump small
        self.o = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.relative_attention_bias = nn.Embedding(NUM_BUCKETS, HEADS)

    def position_bias(self, s):
        context = torch.arange(s, dtype=torch.long)[:, None]
        memory = torch.arange(s, dtype=torch.long)[None, :]
        buckets = relative_position_bucket(memory - context, self.bidirectional)
        values = self.relative_attention_bias(buckets)           # [s, s, heads]
        bias = values.permute([2, 0, 1]).unsqueeze(0)            # [1, heads, s, s]
        if not self.bidirectional:
            causal = torch.tril(torch.ones(s, s))
            bias = bias + (1.0 - causal) * torch.finfo(torch.float32).min
        return bias

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = (t.view(b, s, HEADS, HEAD_DIM).transpose(1, 2) for t in self.qkv(x).split(HIDDEN, dim=-1))
        scores = torch.matmul(q, k.transpose(3, 2))              # T5: no 1/sqrt(d) scaling
        scores += self.position_bias(s)
        w = F.softmax(scores.float(), dim=-1).type_as(scores)
        out = torch.matmul(w, v).transpose(1, 2).contiguous().view(b, s, HIDDEN)
        return self.o(out)


class T5(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.enc_norm = T5LayerNorm(HIDDEN)
        self.enc_attn = SelfAttention(bidirectional=True)
        self.dec_attn = SelfAttention(bidirectional=False)
        self.final_norm = T5LayerNorm(HIDDEN)
        self.head = nn.Linear(HIDDEN, 1, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        x = x + self.enc_attn(self.enc_norm(x))
        x = x + self.dec_attn(x)  # no pre-norm here, to keep the dump small
        return self.head(self.final_norm(x)).squeeze(-1)


model = T5()
model.embed.weight.requires_grad_(False)  # frozen input embedding (keeps the optimizer part of the dump small)
optimizer = torch.optim.Adafactor([p for p in model.parameters() if p.requires_grad], lr=1e-2, foreach=False)
g = zoo_common.generator()
ids = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
target = torch.randn(BATCH, SEQ, generator=g)


def compute_loss():
    return F.mse_loss(model(ids), target)


zoo_common.train_step(debugger, model, optimizer, compute_loss)
