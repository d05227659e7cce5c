"""A small transformer block for the level-mix fixtures: embedding, layer_norm, q/k/v linear,
2-head matmul attention with a causal mask and softmax, dropout (p=0), output projection,
residual add, layer_norm, MLP with gelu, residual add, vocabulary head, cross_entropy loss, one
SGD (momentum) step; batch 1, sequence 8, hidden 16, vocabulary 32.

    python small_transformer.py <msprobe config.json> <dump_path>
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from levelmix_common import generator, setup, train_step

VOCAB, SEQ, HIDDEN, HEADS = 32, 8, 16, 2


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(HIDDEN, HIDDEN)
        self.k = nn.Linear(HIDDEN, HIDDEN)
        self.v = nn.Linear(HIDDEN, HIDDEN)
        self.dropout = nn.Dropout(p=0.0)
        self.out = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x):
        b, s, h = x.shape
        d = h // HEADS

        def heads(t):
            return t.view(b, s, HEADS, d).transpose(1, 2)

        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
        causal = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(causal, float("-inf"))
        probs = self.dropout(F.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, h)
        return self.out(ctx)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(HIDDEN, 2 * HIDDEN)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(2 * HIDDEN, HIDDEN)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class SmallTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.ln1 = nn.LayerNorm(HIDDEN)
        self.attn = Attention()
        self.ln2 = nn.LayerNorm(HIDDEN)
        self.mlp = MLP()
        self.head = nn.Linear(HIDDEN, VOCAB)

    def forward(self, ids):
        x = self.embed(ids)
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return self.head(x)


def main():
    debugger = setup()
    model = SmallTransformer()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = generator()
    ids = torch.randint(0, VOCAB, (1, SEQ + 1), generator=g)
    inputs, labels = ids[:, :-1], ids[:, 1:]
    train_step(debugger, model, optimizer,
               lambda: F.cross_entropy(model(inputs).reshape(-1, VOCAB), labels.reshape(-1)))


if __name__ == "__main__":
    main()
