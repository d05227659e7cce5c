"""GPT-2-style block: Conv1D projections through torch.addmm, attention scores through
torch.baddbmm, gelu(approximate='tanh'), causal masking with masked_fill, layer_norm, softmax,
token + position embeddings, dropout.

Loss: cross_entropy on shifted labels. Optimizer: AdamW (foreach=False).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import zoo_common

debugger = zoo_common.setup()

VOCAB, HIDDEN, HEADS, SEQ, BATCH, MLP_RATIO = 32, 24, 2, 8, 2, 2
HEAD_DIM = HIDDEN // HEADS


class Conv1D(nn.Module):
    """GPT-2's transposed linear layer: y = bias + x @ weight (weight is [nx, nf])."""

    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))
        self.nf = nf

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = Conv1D(3 * HIDDEN, HIDDEN)
        self.c_proj = Conv1D(HIDDEN, HIDDEN)
        self.attn_drop = nn.Dropout(0.1)
        self.resid_drop = nn.Dropout(0.1)
        self.register_buffer("bias", torch.tril(torch.ones(SEQ, SEQ, dtype=torch.bool)).view(1, 1, SEQ, SEQ))

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.c_attn(x).split(HIDDEN, dim=2)
        q = q.view(b, s, HEADS, HEAD_DIM).permute(0, 2, 1, 3).reshape(b * HEADS, s, HEAD_DIM)
        k = k.view(b, s, HEADS, HEAD_DIM).permute(0, 2, 3, 1).reshape(b * HEADS, HEAD_DIM, s)
        v = v.view(b, s, HEADS, HEAD_DIM).permute(0, 2, 1, 3)
        # GPT-2's _upcast_and_reordered_attn: alpha-scaled baddbmm into an empty buffer with beta=0
        w = torch.empty(b * HEADS, s, s, dtype=torch.float32)
        w = torch.baddbmm(w, q.float(), k.float(), beta=0, alpha=1.0 / math.sqrt(HEAD_DIM))
        w = w.reshape(b, HEADS, s, s)
        causal = self.bias[:, :, :s, :s]
        w = w.masked_fill(~causal, torch.finfo(w.dtype).min)
        w = F.softmax(w, dim=-1)
        w = self.attn_drop(w)
        out = torch.matmul(w, v)
        out = out.permute(0, 2, 1, 3).contiguous().view(b, s, HIDDEN)
        return self.resid_drop(self.c_proj(out))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_fc = Conv1D(MLP_RATIO * HIDDEN, HIDDEN)
        self.c_proj = Conv1D(HIDDEN, MLP_RATIO * HIDDEN)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.drop(self.c_proj(F.gelu(self.c_fc(x), approximate="tanh")))


class GPT2(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, HIDDEN)
        self.wpe = nn.Embedding(SEQ, HIDDEN)
        self.ln_1 = nn.LayerNorm(HIDDEN)
        self.attn = Attention()
        self.ln_2 = nn.LayerNorm(HIDDEN)
        self.mlp = MLP()
        self.ln_f = nn.LayerNorm(HIDDEN)
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.01)

    def forward(self, ids):
        pos = torch.arange(0, ids.size(-1), dtype=torch.long).unsqueeze(0)
        x = self.wte(ids) + self.wpe(pos)
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        x = self.ln_f(x)
        return F.linear(x, self.wte.weight)  # tied LM head


model = GPT2()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, foreach=False)
g = zoo_common.generator()
ids = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)


def compute_loss():
    logits = model(ids)
    shift_logits = logits[..., :-1, :].contiguous()
    shift_labels = ids[..., 1:].contiguous()
    return F.cross_entropy(shift_logits.view(-1, VOCAB), shift_labels.view(-1))


zoo_common.train_step(debugger, model, optimizer, compute_loss)
