"""BERT-style encoder: word + position + token-type embedding sums, layer_norm, extended
attention mask ((1 - mask) * min), self-attention, gelu (erf) feed-forward, tanh pooler on [CLS].

Loss: binary_cross_entropy_with_logits (multi-label head, pos_weight). Optimizer: Adam (single-tensor, the CPU default).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import zoo_common

debugger = zoo_common.setup()

VOCAB, HIDDEN, HEADS, FFN, SEQ, BATCH, TYPES, LABELS = 32, 16, 2, 32, 8, 2, 2, 3
HEAD_DIM = HIDDEN // HEADS


class Embeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.word = nn.Embedding(VOCAB, HIDDEN, padding_idx=0)
        self.position = nn.Embedding(SEQ, HIDDEN)
        self.token_type = nn.Embedding(TYPES, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.drop = nn.Dropout(0.1)

    def forward(self, ids, token_type_ids):
        pos = torch.arange(ids.size(1)).expand(ids.size(0), -1)
        x = self.word(ids) + self.token_type(token_type_ids)
        x += self.position(pos)
        return self.drop(self.norm(x))


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)  # fused query/key/value projection
        self.attn_out = nn.Linear(HIDDEN, HIDDEN)
        self.attn_norm = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.inter = nn.Linear(HIDDEN, FFN)
        self.out = nn.Linear(FFN, HIDDEN)
        self.out_norm = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.drop = nn.Dropout(0.1)

    def heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, HEADS, HEAD_DIM).permute(0, 2, 1, 3)

    def forward(self, x, ext_mask):
        b, s, _ = x.shape
        q, k, v = (self.heads(t) for t in self.qkv(x).chunk(3, dim=-1))
        scores = torch.matmul(q, k.transpose(-1, -2))
        scores = scores / math.sqrt(HEAD_DIM)
        scores = scores + ext_mask
        probs = self.drop(F.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous().view(b, s, HIDDEN)
        x = self.attn_norm(self.drop(self.attn_out(ctx)) + x)
        h = F.gelu(self.inter(x))
        return self.out_norm(self.drop(self.out(h)) + x)


class Bert(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = Embeddings()
        self.layer = Layer()
        self.pooler = nn.Linear(HIDDEN, HIDDEN)
        self.classifier = nn.Linear(HIDDEN, LABELS)

    def forward(self, ids, token_type_ids, attention_mask):
        ext = attention_mask[:, None, None, :].to(torch.float32)
        ext = (1.0 - ext) * torch.finfo(torch.float32).min
        x = self.layer(self.emb(ids, token_type_ids), ext)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return self.classifier(pooled)


model = Bert()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
g = zoo_common.generator()
ids = torch.randint(1, VOCAB, (BATCH, SEQ), generator=g)
ids[1, 6:] = 0
attention_mask = (ids != 0).long()
token_type_ids = torch.zeros(BATCH, SEQ, dtype=torch.long)
token_type_ids[:, SEQ // 2:] = 1
targets = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
pos_weight = torch.tensor([1.0, 2.0, 0.5])


def compute_loss():
    logits = model(ids, token_type_ids, attention_mask)
    return F.binary_cross_entropy_with_logits(logits, targets, pos_weight=pos_weight)


zoo_common.train_step(debugger, model, optimizer, compute_loss)
