"""ms_transformer_misc: GPT-2 / BERT / T5 / MoE / UNet pieces and a set of losses in one model,
one training step (MindSpore 2.10, PyNative, CPU).

Usage: python ms_transformer_misc.py <msprobe-config.json | none>

Ops:
- BERT-style embedding sum (ops.gather of token, position and segment tables) and a LayerNorm
  written with Tensor methods (mean, var, __sub__, __truediv__) and ops.sqrt;
- GPT-2-style attention: Conv1D as ops.addmm, scores by ops.baddbmm (alpha = 1/sqrt(d)) plus a
  T5 relative-position bias, padding by Tensor.masked_fill, ops.softmax; MLP with ops.gelu
  (approximate "tanh"); BERT tanh pooler (mint.narrow, Tensor.squeeze, mint.nn.functional.tanh);
- T5 relative position buckets: ops.arange, integer Tensor arithmetic, mint.gt, mint.lt, mint.abs,
  mint.log, mint.maximum / mint.minimum, Tensor.int, ops.where;
- mixture of experts: a router (mint.nn.functional.linear, mint.softmax), ops.topk routing,
  ops.one_hot, mint.gather of the chosen probabilities, mint.scatter of a dispatch mask,
  experts stacked by ops.stack, a load-balancing loss, tokens summed per sequence by
  ops.index_add (Int32 indices) and ops.tensor_scatter_elements (reduction "add");
- a UNet/diffusion block: ops.conv2d, mint.nn.functional.group_norm and ops.group_norm,
  mint.nn.functional.silu, ops.max_pool2d, mint.nn.functional.interpolate (nearest) and
  ops.interpolate (bilinear), mint.cat skip connection;
- losses: ops.mse_loss, ops.l1_loss, ops.smooth_l1_loss, mint.nn.functional.binary_cross_entropy
  and binary_cross_entropy_with_logits, ops.binary_cross_entropy_with_logits (weight and
  pos_weight), ops.kl_div ("batchmean"), ops.nll_loss (Int32 labels, ignore_index), combined with
  reflected Tensor operators (__rmul__, __rsub__, __radd__);
- AdamW written out in mint / ops calls over flattened parameters (ops.cat of the list of
  parameters and of gradients, mint.mul / mint.add with alpha / mint.sqrt / mint.div, mint.split
  back, ops.assign), what mint.optim.AdamW computes: mint.optim.AdamW has no CPU kernel and
  mint.optim's in-place updates do nothing on CPU.
Avoided (no CPU kernel): mint.nn.functional.{gelu, layer_norm, embedding, mse_loss, l1_loss,
kl_div, one_hot, log_softmax, interpolate bilinear (UpsampleBilinear2D)}, mint.{baddbmm, addmm,
topk, scatter_add, index_select, where, stack}, ops.{layer_norm, conv_transpose2d} and
mint.nn.functional.conv_transpose2d (ConvTranspose2D).
"""
import math

import numpy as np
import mindspore as ms
from mindspore import nn, mint, ops, Tensor
import mindspore.mint.nn.functional as F

from zoo_common import Init, setup, run_step

debugger = setup()
init = Init(seed=40)

VOCAB, HIDDEN, HEADS, SEQ, BATCH = 20, 8, 2, 6, 2
HEAD_DIM = HIDDEN // HEADS
EXPERTS, TOPK = 4, 2
BUCKETS, MAX_DIST = 8, 16
IMG_C, IMG_HW = 4, 8


def relative_position_bucket(rel, num_buckets=BUCKETS, max_distance=MAX_DIST):
    """T5's bidirectional bucketing of (key - query) offsets (integer tensor in, Int32 out)."""
    num_buckets //= 2
    ret = mint.gt(rel, 0).int() * num_buckets           # positive offsets in the upper half
    n = mint.abs(rel)
    max_exact = num_buckets // 2
    is_small = mint.lt(n, max_exact)
    nf = mint.maximum(n.float(), Tensor(1.0, ms.float32))  # log(0) would be cast to int below
    large = mint.log(nf / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    large = max_exact + large.int()
    large = mint.minimum(large, Tensor(num_buckets - 1, ms.int32))
    return ret + ops.where(is_small, n, large)


class LayerNorm(nn.Cell):
    def __init__(self, name, eps=1e-5):
        super().__init__()
        self.weight = init.param((HIDDEN,), name + ".weight", value=1.0)
        self.bias = init.param((HIDDEN,), name + ".bias", value=0.0)
        self.eps = eps

    def construct(self, x):
        mu = x.mean(-1, keep_dims=True)
        var = x.var(-1, keepdims=True)
        return (x - mu) / ops.sqrt(var + self.eps) * self.weight + self.bias


class Model(nn.Cell):
    def __init__(self):
        super().__init__()
        self.tok = init.param((VOCAB, HIDDEN), "wte", std=0.5)
        self.pos = init.param((SEQ, HIDDEN), "wpe", std=0.5)
        self.seg = init.param((2, HIDDEN), "segment", std=0.5)
        self.ln1 = LayerNorm("ln1")
        self.ln2 = LayerNorm("ln2")
        self.c_attn_w = init.param((HIDDEN, 3 * HIDDEN), "c_attn.weight")    # GPT-2 Conv1D: x @ W + b
        self.c_attn_b = init.param((3 * HIDDEN,), "c_attn.bias", value=0.0)
        self.c_proj_w = init.param((HIDDEN, HIDDEN), "c_proj.weight")
        self.c_proj_b = init.param((HIDDEN,), "c_proj.bias", value=0.0)
        self.rel_bias = init.param((BUCKETS, HEADS), "rel_bias", std=0.1)
        self.fc_w = init.param((HIDDEN, 2 * HIDDEN), "mlp.c_fc.weight")
        self.fc_b = init.param((2 * HIDDEN,), "mlp.c_fc.bias", value=0.0)
        self.proj_w = init.param((2 * HIDDEN, HIDDEN), "mlp.c_proj.weight")
        self.proj_b = init.param((HIDDEN,), "mlp.c_proj.bias", value=0.0)
        self.router = init.param((EXPERTS, HIDDEN), "moe.router")
        self.experts_w1 = [init.param((HIDDEN, HIDDEN), f"moe.e{e}.w1") for e in range(EXPERTS)]
        self.experts_w2 = [init.param((HIDDEN, HIDDEN), f"moe.e{e}.w2") for e in range(EXPERTS)]
        for e in range(EXPERTS):
            setattr(self, f"e{e}_w1", self.experts_w1[e])
            setattr(self, f"e{e}_w2", self.experts_w2[e])
        self.pool_w = init.param((HIDDEN, HIDDEN), "pooler.weight")
        self.pool_b = init.param((HIDDEN,), "pooler.bias", value=0.0)
        self.cls_w = init.param((3, HIDDEN), "cls.weight")
        self.bin_w = init.param((2, HIDDEN), "bin.weight")
        # UNet block
        self.u_conv1 = init.param((IMG_C, IMG_C, 3, 3), "unet.conv1")
        self.u_gn1_w = init.param((IMG_C,), "unet.gn1.weight", value=1.0)
        self.u_gn1_b = init.param((IMG_C,), "unet.gn1.bias", value=0.0)
        self.u_conv2 = init.param((IMG_C, IMG_C, 3, 3), "unet.conv2")
        self.u_gn2_w = init.param((IMG_C,), "unet.gn2.weight", value=1.0)
        self.u_gn2_b = init.param((IMG_C,), "unet.gn2.bias", value=0.0)
        self.u_out = init.param((IMG_C, 2 * IMG_C, 1, 1), "unet.out")

    # ---- transformer -----------------------------------------------------------------
    def attention(self, x, pad_blocked, pos_bias):
        b, s, h = x.shape
        qkv = ops.addmm(self.c_attn_b, x.reshape(b * s, h), self.c_attn_w).reshape(b, s, 3 * h)
        q, k, v = mint.split(qkv, HIDDEN, dim=-1)
        q = q.reshape(b, s, HEADS, HEAD_DIM).transpose(0, 2, 1, 3).reshape(b * HEADS, s, HEAD_DIM)
        k = k.reshape(b, s, HEADS, HEAD_DIM).transpose(0, 2, 3, 1).reshape(b * HEADS, HEAD_DIM, s)
        v = v.reshape(b, s, HEADS, HEAD_DIM).transpose(0, 2, 1, 3).reshape(b * HEADS, s, HEAD_DIM)
        bias = pos_bias.reshape(1, HEADS, s, s).broadcast_to((b, HEADS, s, s)).reshape(b * HEADS, s, s)
        scores = ops.baddbmm(bias, q, k, beta=1.0, alpha=1.0 / math.sqrt(HEAD_DIM))
        scores = scores.reshape(b, HEADS, s, s).masked_fill(pad_blocked, -1e4)
        probs = ops.softmax(scores, -1).reshape(b * HEADS, s, s)
        out = ops.bmm(probs, v).reshape(b, HEADS, s, HEAD_DIM).transpose(0, 2, 1, 3).reshape(b * s, h)
        return ops.addmm(self.c_proj_b, out, self.c_proj_w).reshape(b, s, h)

    def mlp(self, x):
        b, s, h = x.shape
        y = ops.gelu(ops.addmm(self.fc_b, x.reshape(b * s, h), self.fc_w), approximate="tanh")
        return ops.addmm(self.proj_b, y, self.proj_w).reshape(b, s, h)

    def moe(self, x):
        t = x.shape[0]
        probs = mint.softmax(F.linear(x, self.router), dim=-1)                # [t, E]
        _, top_i = ops.topk(probs, TOPK)                                     # Int32 [t, k]
        top_p = mint.gather(probs, 1, top_i.astype(ms.int64))               # differentiable
        top_p = top_p / top_p.sum(-1, keepdims=True)
        on, off = Tensor(1.0, ms.float32), Tensor(0.0, ms.float32)
        onehot = ops.one_hot(top_i, EXPERTS, on, off)                        # [t, k, E]
        combine = (onehot * top_p.reshape(t, TOPK, 1)).sum(1)               # [t, E]
        outs = []
        for e in range(EXPERTS):
            outs.append(F.linear(ops.gelu(F.linear(x, self.experts_w1[e])), self.experts_w2[e]))
        stacked = ops.stack(outs, 1)                                         # [t, E, h]
        y = (combine.reshape(t, EXPERTS, 1) * stacked).sum(1)
        dispatch = mint.scatter(mint.zeros((t, EXPERTS), dtype=ms.float32), 1,
                                top_i.astype(ms.int64), mint.ones((t, TOPK), dtype=ms.float32))
        aux = EXPERTS * (dispatch.mean(0) * probs.mean(0)).sum()
        return y, aux

    def unet(self, img):
        h = ops.conv2d(img, self.u_conv1, pad_mode="pad", padding=1)
        h = F.silu(F.group_norm(h, 2, self.u_gn1_w, self.u_gn1_b))
        h = ops.conv2d(h, self.u_conv2, pad_mode="same")
        h = F.silu(ops.group_norm(h, 2, self.u_gn2_w, self.u_gn2_b))
        skip = img + h
        low = ops.max_pool2d(skip, 2, 2)                                      # [b, c, 4, 4]
        up_a = F.interpolate(low, scale_factor=2.0, mode="nearest")
        up_b = ops.interpolate(low, size=(IMG_HW, IMG_HW), mode="bilinear", align_corners=False)
        return ops.conv2d(mint.cat((up_a + up_b, skip), dim=1), self.u_out)

    def construct(self, ids, segments, token_batch, img, targets):
        b, s = ids.shape
        pos_ids = ops.arange(s)
        x = ops.gather(self.tok, ids, 0) + ops.gather(self.pos, pos_ids, 0) + ops.gather(self.seg, segments, 0)
        # T5 relative position bias
        rel = pos_ids.reshape(1, s) - pos_ids.reshape(s, 1)                   # key - query
        buckets = relative_position_bucket(rel)
        pos_bias = ops.gather(self.rel_bias, buckets, 0).transpose(2, 0, 1)  # [heads, s, s]
        pad_blocked = (ids == 0).reshape(b, 1, 1, s)
        x = x + self.attention(self.ln1(x), pad_blocked, pos_bias)
        x = x + self.mlp(self.ln2(x))
        y, aux = self.moe(x.reshape(b * s, HIDDEN))
        x = x + y.reshape(b, s, HIDDEN)
        # sequence sums by index_add and tensor_scatter_elements
        seq_sum = ops.index_add(mint.zeros((b, HIDDEN), dtype=ms.float32), token_batch, y, 0)
        scatter_idx = token_batch.reshape(b * s, 1).broadcast_to((b * s, HIDDEN)).astype(ms.int64)
        seq_sum2 = ops.tensor_scatter_elements(mint.zeros((b, HIDDEN), dtype=ms.float32), scatter_idx,
                                               y, 0, "add")
        pooled = F.tanh(F.linear(mint.narrow(x, 1, 0, 1).squeeze(1), self.pool_w, self.pool_b))
        cls_logits = F.linear(pooled + seq_sum / s, self.cls_w)              # [b, 3]
        bin_logits = F.linear(pooled + seq_sum2 / s, self.bin_w)             # [b, 2]
        img_out = self.unet(img)
        # losses
        l_nll = ops.nll_loss(ops.log_softmax(cls_logits, -1), targets["cls"], ignore_index=-100)
        l_kl = ops.kl_div(ops.log_softmax(cls_logits, 1), ops.softmax(targets["teacher"], 1),
                          reduction="batchmean")
        l_bce = F.binary_cross_entropy(F.sigmoid(bin_logits), targets["bin"])
        l_bcel = F.binary_cross_entropy_with_logits(bin_logits, targets["bin"])
        l_bcel_w = ops.binary_cross_entropy_with_logits(bin_logits, targets["bin"], targets["bin_w"],
                                                        targets["pos_w"])
        l_mse = ops.mse_loss(img_out, targets["img"])
        l_l1 = ops.l1_loss(img_out, targets["img"])
        l_sl1 = ops.smooth_l1_loss(img_out, targets["img"], beta=0.5, reduction="mean")
        recon = 0.5 * l_mse + l_l1 + l_sl1
        keep = 1.0 - targets["drop_frac"]
        return l_nll + l_kl + l_bce + l_bcel + l_bcel_w + keep * recon + 0.01 * aux


class FlatAdamW:
    """AdamW over one flat vector of all parameters, in mint / ops calls (no in-place ops)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        self.params = params
        self.sizes = [int(np.prod(p.shape)) for p in params]
        total = sum(self.sizes)
        self.m = mint.zeros((total,), dtype=ms.float32)
        self.v = mint.zeros((total,), dtype=ms.float32)
        self.lr, self.betas, self.eps, self.wd = lr, betas, eps, weight_decay
        self.t = 0

    def __call__(self, grads):
        self.t += 1
        b1, b2 = self.betas
        p = ops.cat([q.reshape(-1) for q in self.params])
        g = ops.cat([q.reshape(-1) for q in grads])
        self.m = mint.add(mint.mul(self.m, b1), g, alpha=1 - b1)
        self.v = mint.add(mint.mul(self.v, b2), mint.mul(g, g), alpha=1 - b2)
        step_size = self.lr / (1 - b1 ** self.t)
        denom = mint.add(mint.div(mint.sqrt(self.v), math.sqrt(1 - b2 ** self.t)), self.eps)
        p = mint.sub(mint.mul(p, 1 - self.lr * self.wd), mint.div(self.m, denom), alpha=step_size)
        for param, new in zip(self.params, mint.split(p, self.sizes)):
            ops.assign(param, new.reshape(param.shape))


net = Model()
params = net.trainable_params()
opt = FlatAdamW(params)
grad_fn = ms.value_and_grad(net, None, params)

rng = np.random.default_rng(41)
ids_np = rng.integers(1, VOCAB, (BATCH, SEQ))
ids_np[0, -1] = 0                                                       # one padded position
ids = Tensor(ids_np, ms.int32)
segments = Tensor((np.arange(SEQ) >= SEQ // 2).astype(np.int32).reshape(1, SEQ).repeat(BATCH, 0))
token_batch = Tensor(np.repeat(np.arange(BATCH), SEQ).astype(np.int32))
img = init.normal((BATCH, IMG_C, IMG_HW, IMG_HW))
targets = {
    "cls": Tensor(np.array([2, -100], np.int32)),
    "teacher": init.normal((BATCH, 3)),
    "bin": init.uniform((BATCH, 2), 0.05, 0.95),
    "bin_w": init.uniform((BATCH, 2), 0.5, 1.5),
    "pos_w": init.uniform((2,), 0.5, 2.0),
    "img": init.normal((BATCH, IMG_C, IMG_HW, IMG_HW)),
    "drop_frac": Tensor(0.25, ms.float32),
}


def step():
    loss, grads = grad_fn(ids, segments, token_batch, img, targets)
    opt(grads)
    return loss


run_step(debugger, step, "ms_transformer_misc")
