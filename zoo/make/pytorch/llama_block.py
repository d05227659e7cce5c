"""LLaMA-style decoder block: rotary embeddings (arange/outer/cos/sin/cat/neg), RMSNorm in the
manual pow/mean/rsqrt form (torch.nn.functional.rms_norm is not hooked by msprobe 8.3.2),
SwiGLU (silu, mul), a causal mask from tril combined with a padding mask through comparison
and logical ops, repeat_interleave for grouped-query attention, softmax, matmul.

Loss: cross_entropy. Optimizer: AdamW (foreach=True) + clip_grad_norm_.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import zoo_common

debugger = zoo_common.setup()

VOCAB, HIDDEN, HEADS, KV_HEADS, FFN, SEQ, BATCH = 48, 32, 4, 2, 64, 8, 2
HEAD_DIM = HIDDEN // HEADS
PAD_ID = 0


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


def rotary(seq, dim, base=10000.0):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    t = torch.arange(seq, dtype=torch.float32)
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((torch.neg(x2), x1), dim=-1)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(HIDDEN, HEADS * HEAD_DIM, bias=False)
        self.k = nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.v = nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.o = nn.Linear(HEADS * HEAD_DIM, HIDDEN, bias=False)

    def forward(self, x, cos, sin, mask):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, HEADS, HEAD_DIM).transpose(1, 2)
        k = self.k(x).view(b, s, KV_HEADS, HEAD_DIM).transpose(1, 2)
        v = self.v(x).view(b, s, KV_HEADS, HEAD_DIM).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = torch.repeat_interleave(k, HEADS // KV_HEADS, dim=1)
        v = v.repeat_interleave(HEADS // KV_HEADS, dim=1)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(HEAD_DIM)
        scores = scores.masked_fill(torch.logical_not(mask), torch.finfo(scores.dtype).min)
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(probs, v)
        out = out.transpose(1, 2).reshape(b, s, HIDDEN)
        return self.o(out)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(HIDDEN, FFN, bias=False)
        self.up = nn.Linear(HIDDEN, FFN, bias=False)
        self.down = nn.Linear(FFN, HIDDEN, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Llama(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN, padding_idx=PAD_ID)
        self.norm1 = RMSNorm(HIDDEN)
        self.attn = Attention()
        self.norm2 = RMSNorm(HIDDEN)
        self.mlp = MLP()
        self.norm = RMSNorm(HIDDEN)
        self.lm_head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, ids):
        b, s = ids.shape
        cos, sin = rotary(s, HEAD_DIM)
        causal = torch.tril(torch.ones(s, s, dtype=torch.bool))
        key_ok = ids.ne(PAD_ID)                                   # padding mask from a comparison
        mask = torch.logical_and(causal[None, None], key_ok[:, None, None, :])
        # keep the diagonal so a padded query still attends to itself
        pos = torch.arange(s)
        mask = torch.logical_or(mask, torch.eq(pos[:, None], pos[None, :]))
        x = self.embed(ids)
        x = x + self.attn(self.norm1(x), cos, sin, mask)
        x = x + self.mlp(self.norm2(x))
        return self.lm_head(self.norm(x))


model = Llama()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1, foreach=True)
g = zoo_common.generator()
ids = torch.randint(1, VOCAB, (BATCH, SEQ), generator=g)
ids[1, -2:] = PAD_ID  # left-aligned sequence with two pad tokens
labels = torch.cat((ids[:, 1:], torch.full((BATCH, 1), PAD_ID)), dim=1)


def compute_loss():
    logits = model(ids)
    return F.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1), ignore_index=PAD_ID)


zoo_common.train_step(debugger, model, optimizer, compute_loss, clip_norm=1.0)
