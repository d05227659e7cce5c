"""ms_llama_block: a LLaMA-style decoder (two blocks), one training step (MindSpore 2.10, PyNative, CPU).

Usage: python ms_llama_block.py <msprobe-config.json | none>

Ops: token embedding by ops.gather; rotary embeddings built from ops.arange, Tensor __rpow__ /
__truediv__, ops.outer (block 0) and a broadcast Tensor __mul__ (block 1), ops.cat / mint.cat,
mint.cos / ops.sin, and applied with rotate_half (mint.chunk / mint.split, mint.neg /
Tensor.neg, mint.cat / ops.cat); RMSNorm written out (mint.pow / mint.mean / mint.rsqrt and the
Tensor-method spelling pow / mean / ops.rsqrt); grouped-query attention (4 query heads, 2 kv
heads) with Tensor.repeat_interleave and ops.repeat_interleave; scores by mint.matmul and
Tensor @; a causal mask from ops.tril(mint.ones) and from mint.ge on ops.arange positions,
combined with a padding mask (mint.ne) by mint.logical_and / mint.logical_not, applied by
Tensor.masked_fill and ops.masked_fill; mint.softmax / ops.softmax; SwiGLU (mint.nn.functional
silu / ops.silu, Tensor __mul__ / mint.mul); ops.cross_entropy over Int32 targets with
ignore_index and label smoothing; gradient clipping by ops.clip_by_global_norm;
mindspore.nn.AdamWeightDecay (AdamW).
Avoided (no CPU kernel): mint.{arange, outer, tril, repeat_interleave, where, stack},
ops.rms_norm / mint.nn.functional rms_norm (RmsNorm), mint.nn.functional.{embedding,
cross_entropy, log_softmax}, mint.optim.AdamW.
"""
import math

import numpy as np
import mindspore as ms
from mindspore import nn, mint, ops, Tensor
import mindspore.mint.nn.functional as F

from zoo_common import Init, setup, run_step

debugger = setup()
init = Init(seed=30)

VOCAB, HIDDEN, HEADS, KV_HEADS, FFN = 48, 32, 4, 2, 64
HEAD_DIM = HIDDEN // HEADS
BATCH, SEQ = 2, 8
PAD = 0


def rope_tables(seq, dim, variant):
    """cos/sin tables of rotary embeddings (no gradient)."""
    exponent = ops.arange(0, dim, 2, dtype=ms.float32) / dim
    inv_freq = 1.0 / (10000.0 ** exponent)                           # Tensor __rpow__
    pos = ops.arange(seq, dtype=ms.float32)
    if variant == 0:
        freqs = ops.outer(pos, inv_freq)
        emb = ops.cat((freqs, freqs), -1)
    else:
        freqs = pos.reshape(seq, 1) * inv_freq.reshape(1, -1)
        emb = mint.cat((freqs, freqs), dim=-1)
    return mint.cos(emb), ops.sin(emb)


def rotate_half(x, variant):
    if variant == 0:
        x1, x2 = mint.chunk(x, 2, dim=-1)
        return mint.cat((mint.neg(x2), x1), dim=-1)
    x1, x2 = mint.split(x, HEAD_DIM // 2, dim=-1)
    return ops.cat((x2.neg(), x1), -1)


class RMSNorm(nn.Cell):
    def __init__(self, name, variant, eps=1e-6):
        super().__init__()
        self.weight = init.param((HIDDEN,), name + ".weight", value=1.0)
        self.variant = variant
        self.eps = eps

    def construct(self, x):
        if self.variant == 0:
            var = mint.mean(mint.pow(x, 2), -1, keepdim=True)
            return x * mint.rsqrt(var + self.eps) * self.weight
        var = x.pow(2).mean(-1, keep_dims=True)
        return mint.mul(x * ops.rsqrt(var + self.eps), self.weight)


class Block(nn.Cell):
    def __init__(self, idx):
        super().__init__()
        n = f"layers.{idx}"
        self.norm1 = RMSNorm(n + ".attn_norm", idx)
        self.norm2 = RMSNorm(n + ".ffn_norm", idx)
        self.wq = init.param((HEADS * HEAD_DIM, HIDDEN), n + ".wq")
        self.wk = init.param((KV_HEADS * HEAD_DIM, HIDDEN), n + ".wk")
        self.wv = init.param((KV_HEADS * HEAD_DIM, HIDDEN), n + ".wv")
        self.wo = init.param((HIDDEN, HEADS * HEAD_DIM), n + ".wo")
        self.w_gate = init.param((FFN, HIDDEN), n + ".w_gate")
        self.w_up = init.param((FFN, HIDDEN), n + ".w_up")
        self.w_down = init.param((HIDDEN, FFN), n + ".w_down")
        self.idx = idx

    def attention(self, x, cos, sin, blocked):
        b, s, _ = x.shape
        q = F.linear(x, self.wq).reshape(b, s, HEADS, HEAD_DIM)
        k = F.linear(x, self.wk).reshape(b, s, KV_HEADS, HEAD_DIM)
        v = F.linear(x, self.wv).reshape(b, s, KV_HEADS, HEAD_DIM)
        q = mint.transpose(q, 1, 2)                                    # [b, heads, s, d]
        k = mint.transpose(k, 1, 2)
        v = mint.transpose(v, 1, 2)
        q = q * cos + rotate_half(q, self.idx) * sin
        k = k * cos + rotate_half(k, self.idx) * sin
        rep = HEADS // KV_HEADS
        if self.idx == 0:
            k = k.repeat_interleave(rep, 1)
            v = v.repeat_interleave(rep, 1)
            scores = mint.matmul(q, mint.transpose(k, 2, 3)) / math.sqrt(HEAD_DIM)
            scores = scores.masked_fill(blocked, float("-inf"))
            probs = mint.softmax(scores, dim=-1)
        else:
            k = ops.repeat_interleave(k, rep, 1)
            v = ops.repeat_interleave(v, rep, 1)
            scores = mint.div(q @ k.swapaxes(2, 3), math.sqrt(HEAD_DIM))
            scores = ops.masked_fill(scores, blocked, Tensor(-1e9, ms.float32))
            probs = ops.softmax(scores, -1)
        out = mint.matmul(probs, v)
        out = mint.transpose(out, 1, 2).reshape(b, s, HEADS * HEAD_DIM)
        return F.linear(out, self.wo)

    def mlp(self, x):
        if self.idx == 0:
            h = F.silu(F.linear(x, self.w_gate)) * F.linear(x, self.w_up)
        else:
            h = mint.mul(ops.silu(F.linear(x, self.w_gate)), F.linear(x, self.w_up))
        return F.linear(h, self.w_down)

    def construct(self, x, cos, sin, blocked):
        x = x + self.attention(self.norm1(x), cos, sin, blocked)
        return mint.add(x, self.mlp(self.norm2(x)))


class Llama(nn.Cell):
    def __init__(self):
        super().__init__()
        self.tok = init.param((VOCAB, HIDDEN), "tok_embeddings.weight", std=0.5)
        self.layers = nn.CellList([Block(0), Block(1)])
        self.norm = RMSNorm("norm", 0)
        self.lm_head = init.param((VOCAB, HIDDEN), "lm_head.weight")

    def masks(self, ids):
        s = ids.shape[1]
        causal_a = ops.tril(mint.ones((s, s), dtype=ms.float32)) > 0     # [s, s] bool
        pos = ops.arange(s)
        causal_b = mint.ge(pos.reshape(s, 1), pos.reshape(1, s))
        causal = mint.logical_and(causal_a, causal_b)
        key_ok = mint.ne(ids, PAD)                                       # [b, s]
        allowed = mint.logical_and(causal.reshape(1, 1, s, s), key_ok.reshape(-1, 1, 1, s))
        return mint.logical_not(allowed)                                 # True where blocked

    def construct(self, ids, targets):
        x = ops.gather(self.tok, ids, 0)
        blocked = self.masks(ids)
        for i, layer in enumerate(self.layers):
            cos, sin = rope_tables(ids.shape[1], HEAD_DIM, i)
            x = layer(x, cos, sin, blocked)
        logits = F.linear(self.norm(x), self.lm_head)
        return ops.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1),
                                 ignore_index=-100, label_smoothing=0.05)


net = Llama()
opt = nn.AdamWeightDecay(net.trainable_params(), learning_rate=1e-3, weight_decay=0.01)
grad_fn = ms.value_and_grad(net, None, opt.parameters)

rng = np.random.default_rng(31)
ids_np = rng.integers(1, VOCAB, (BATCH, SEQ))
ids_np[1, -2:] = PAD                                                     # right padding
targets_np = np.concatenate([ids_np[:, 1:], np.full((BATCH, 1), PAD)], 1)
targets_np[targets_np == PAD] = -100                                     # ignored positions
ids = Tensor(ids_np, ms.int32)
targets = Tensor(targets_np, ms.int32)


def step():
    loss, grads = grad_fn(ids, targets)
    grads = ops.clip_by_global_norm(grads, 1.0)
    opt(grads)
    return loss


run_step(debugger, step, "ms_llama_block")
