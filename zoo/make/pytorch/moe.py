"""Mixture-of-experts layer (Mixtral/Switch style): router softmax over experts, topk routing,
renormalised top-k weights, one_hot expert masks for the load-balancing loss, gather of the chosen
probabilities, scatter into a dense routing matrix, token dispatch through where/index_select and
combine through index_add, scatter_add for the per-expert token counts.

Loss: l1_loss + smooth_l1_loss + auxiliary load-balancing and router z-loss (logsumexp). Optimizer: SGD (plain).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import zoo_common

debugger = zoo_common.setup()

HIDDEN, FFN, EXPERTS, TOP_K, SEQ, BATCH = 16, 32, 4, 2, 8, 2


class Expert(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Linear(HIDDEN, FFN, bias=False)
        self.w2 = nn.Linear(FFN, HIDDEN, bias=False)

    def forward(self, x):
        return self.w2(F.gelu(self.w1(x)))


class MoE(nn.Module):
    def __init__(self):
        super().__init__()
        self.router = nn.Linear(HIDDEN, EXPERTS, bias=False)
        self.experts = nn.ModuleList([Expert() for _ in range(EXPERTS)])

    def forward(self, x):
        b, s, h = x.shape
        tokens = x.reshape(-1, h)
        n = tokens.shape[0]
        logits = self.router(tokens)
        probs = F.softmax(logits, dim=-1, dtype=torch.float32)
        top_w, top_i = torch.topk(probs, TOP_K, dim=-1)
        top_w = top_w / top_w.sum(dim=-1, keepdim=True)
        # dense [tokens, experts] combine matrix (GShard style) through scatter, read back through gather
        dense = torch.zeros(n, EXPERTS).scatter(1, top_i, top_w)
        combine = torch.gather(dense, 1, top_i)                 # == top_w, but through the dense matrix
        # load-balancing auxiliary loss (Switch Transformer): fraction routed x mean probability
        expert_mask = F.one_hot(top_i, num_classes=EXPERTS)      # [n, k, E]
        tokens_per_expert = expert_mask.float().mean(dim=(0, 1))
        aux = EXPERTS * torch.sum(tokens_per_expert * probs.mean(dim=0))
        z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()   # router z-loss (ST-MoE)
        counts = torch.zeros(EXPERTS, dtype=torch.long).scatter_add(0, top_i.flatten(), torch.ones_like(top_i.flatten()))
        out = torch.zeros_like(tokens)
        for e, expert in enumerate(self.experts):
            token_idx, slot = torch.where(top_i == e)
            if token_idx.numel() == 0:
                continue
            y = expert(torch.index_select(tokens, 0, token_idx))
            y = y * combine[token_idx, slot].unsqueeze(-1)
            out = out.index_add(0, token_idx, y)
        return out.reshape(b, s, h), aux + 0.1 * z_loss, counts


model = MoE()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
g = zoo_common.generator()
x = torch.randn(BATCH, SEQ, HIDDEN, generator=g)
target = torch.randn(BATCH, SEQ, HIDDEN, generator=g)


def compute_loss():
    out, aux, _ = model(x)
    return F.l1_loss(out, target) + F.smooth_l1_loss(out, target, beta=0.5) + 0.01 * aux


zoo_common.train_step(debugger, model, optimizer, compute_loss)
