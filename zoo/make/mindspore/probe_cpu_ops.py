"""Probe which MindSpore 2.10 ops run on the CPU backend (PyNative), forward and backward.

Usage: python probe_cpu_ops.py [name-substring ...]
Prints one line per candidate: OK / FWD-FAIL (the call itself) / BWD-FAIL (under
ms.value_and_grad) and the first line of the error.
The zoo models (ms_*.py next to this file) only use ops that print OK here; the README's
MindSpore section lists the ones that failed.  msprobe is not needed for this script.
"""
import sys

import numpy as np
import mindspore as ms
from mindspore import mint, ops, Tensor
import mindspore.mint.nn.functional as F

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
rng = np.random.default_rng(0)


def t(*shape, dtype=ms.float32, low=None, high=None):
    if low is not None:
        return Tensor(rng.uniform(low, high, shape).astype(np.float32), dtype)
    return Tensor(rng.standard_normal(shape).astype(np.float32), dtype)


def ti(*shape, high=4, dtype=ms.int32):
    return Tensor(rng.integers(0, high, shape), dtype)


x4 = t(2, 3, 8, 8)
w4 = t(4, 3, 3, 3)
dw = t(3, 1, 3, 3)
x2 = t(4, 6)
p01 = t(4, 6, low=0.05, high=0.95)
lbl = ti(4, high=6)
lbl64 = ti(4, high=6, dtype=ms.int64)
bmask = Tensor(rng.random((4, 6)) > 0.5)
rm, rv = Tensor(np.zeros(3, np.float32)), Tensor(np.ones(3, np.float32))
g3, b3 = t(3), t(3)

CASES = {
    # mindspore.ops (Functional)
    "ops.conv2d pad_mode=pad": lambda x: ops.conv2d(x, w4, pad_mode="pad", padding=1),
    "ops.conv2d pad_mode=same": lambda x: ops.conv2d(x, w4, pad_mode="same"),
    "ops.conv2d depthwise": lambda x: ops.conv2d(x, dw, pad_mode="pad", padding=1, groups=3),
    "ops.batch_norm": lambda x: ops.batch_norm(x, rm, rv, g3, b3, training=True),
    "ops.relu": lambda x: ops.relu(x),
    "ops.max_pool2d": lambda x: ops.max_pool2d(x, 2, 2),
    "ops.avg_pool2d": lambda x: ops.avg_pool2d(x, 2, 2),
    "ops.adaptive_avg_pool2d": lambda x: ops.adaptive_avg_pool2d(x, (1, 1)),
    "ops.adaptive_max_pool2d": lambda x: ops.adaptive_max_pool2d(x, (2, 2)),
    "ops.dropout": lambda x: ops.dropout(x, p=0.1, training=True),
    "ops.dense": lambda x: ops.dense(x, t(3, 6), t(3)),
    "ops.hardswish": lambda x: ops.hardswish(x),
    "ops.hardsigmoid": lambda x: ops.hardsigmoid(x),
    "ops.gelu tanh": lambda x: ops.gelu(x, approximate="tanh"),
    "ops.silu": lambda x: ops.silu(x),
    "ops.sigmoid": lambda x: ops.sigmoid(x),
    "ops.softmax": lambda x: ops.softmax(x, -1),
    "ops.log_softmax": lambda x: ops.log_softmax(x, -1),
    "ops.cross_entropy int32": lambda x: ops.cross_entropy(x, lbl),
    "ops.cross_entropy ls": lambda x: ops.cross_entropy(x, lbl, label_smoothing=0.1),
    "ops.cross_entropy ignore_index": lambda x: ops.cross_entropy(x, Tensor(np.array([1, -100, 2, 0], np.int32)), ignore_index=-100, label_smoothing=0.1),
    "ops.nll_loss ignore_index": lambda x: ops.nll_loss(ops.log_softmax(x, -1), Tensor(np.array([1, -100, 2, 0], np.int32)), ignore_index=-100),
    "ops.clip_by_global_norm": lambda x: ops.clip_by_global_norm((x, x * 2), 1.0)[1],
    "ops.hardtanh": lambda x: ops.hardtanh(x),
    "ops.softmax dtype": lambda x: ops.softmax(x, -1, dtype=ms.float32),
    "ops.dropout2d": lambda x: ops.dropout2d(x, 0.2, True),
    "ops.var": lambda x: ops.var(x, -1, keepdims=True),
    "ops.cumsum": lambda x: ops.cumsum(x, 1),
    "ops.bmm": lambda x: ops.bmm(x.reshape(2, 2, 6), t(2, 6, 3)),
    "ops.baddbmm": lambda x: ops.baddbmm(t(2, 2, 3), x.reshape(2, 2, 6), t(2, 6, 3)),
    "ops.addmm": lambda x: ops.addmm(t(4, 3), x, t(6, 3)),
    "ops.logsumexp": lambda x: ops.logsumexp(x, -1),
    "ops.amax": lambda x: ops.amax(x, -1),
    "ops.min": lambda x: ops.min(x, 1)[0],
    "ops.log_softmax dim0": lambda x: ops.log_softmax(x, 0),
    "ops.gelu none": lambda x: ops.gelu(x),
    "ops.embedding": lambda x: ops.embedding(ti(5, high=4), x) if hasattr(ops, "embedding") else None,
    "ops.nll_loss": lambda x: ops.nll_loss(ops.log_softmax(x, -1), lbl),
    "ops.gather": lambda x: ops.gather(x, ti(5, high=4), 0),
    "ops.gather_elements": lambda x: ops.gather_elements(x, 1, ti(4, 2, high=6, dtype=ms.int64)),
    "ops.one_hot": lambda x: ops.one_hot(lbl, 6, Tensor(1.0), Tensor(0.0)) * x,
    "ops.topk": lambda x: ops.topk(x, 2)[0],
    "ops.masked_fill": lambda x: ops.masked_fill(x, bmask, 0.0),
    "ops.tril": lambda x: ops.tril(x),
    "ops.outer": lambda x: ops.outer(x[0], x[1]),
    "ops.cos": lambda x: ops.cos(x),
    "ops.sin": lambda x: ops.sin(x),
    "ops.cat": lambda x: ops.cat((x, x), -1),
    "ops.neg": lambda x: ops.neg(x),
    "ops.rms_norm": lambda x: ops.rms_norm(x, Tensor(np.ones(6, np.float32)))[0],
    "ops.matmul": lambda x: ops.matmul(x, t(6, 3)),
    "ops.group_norm": lambda x: ops.group_norm(x, 1, g3, b3) if hasattr(ops, "group_norm") else None,
    "ops.interpolate nearest": lambda x: ops.interpolate(x, scale_factor=2.0, mode="nearest", recompute_scale_factor=True),
    "ops.interpolate bilinear": lambda x: ops.interpolate(x, size=(16, 16), mode="bilinear", align_corners=False),
    "ops.mse_loss": lambda x: ops.mse_loss(x, t(4, 6)),
    "ops.l1_loss": lambda x: ops.l1_loss(x, t(4, 6)),
    "ops.smooth_l1_loss": lambda x: ops.smooth_l1_loss(x, t(4, 6)),
    "ops.binary_cross_entropy": lambda x: ops.binary_cross_entropy(ops.sigmoid(x), p01),
    "ops.binary_cross_entropy_with_logits": lambda x: ops.binary_cross_entropy_with_logits(x, p01, t(4, 6, low=1, high=1.1), t(6, low=1, high=1.1)),
    "ops.kl_div": lambda x: ops.kl_div(ops.log_softmax(x, -1), ops.softmax(t(4, 6), -1), reduction="batchmean"),
    "ops.square": lambda x: ops.square(x),
    "ops.rsqrt": lambda x: ops.rsqrt(ops.abs(x) + 1),
    "ops.mean": lambda x: ops.mean(x, -1, keep_dims=True),
    "ops.logical_and": lambda x: ops.logical_and(x > 0, bmask) * x,
    "ops.where": lambda x: ops.where(bmask, x, 0.0),
    "ops.arange": lambda x: ops.arange(0, 6, dtype=ms.float32) * x,
    "ops.repeat_interleave": lambda x: ops.repeat_interleave(x, 2, 0),
    "ops.tanh": lambda x: ops.tanh(x),
    "ops.erf": lambda x: ops.erf(x),
    "ops.clip_by_norm": lambda x: ops.clip_by_norm(x, 1.0),
    "ops.conv_transpose2d": lambda x: ops.conv_transpose2d(x, t(3, 2, 2, 2), stride=2) if hasattr(ops, "conv_transpose2d") else None,
    "ops.pad": lambda x: ops.pad(x, (1, 1)),
    "ops.stack": lambda x: ops.stack((x, x)),
    "ops.argmax": lambda x: ops.argmax(x, -1).astype(ms.float32).sum() + x,
    "ops.softplus": lambda x: ops.softplus(x),
    "ops.flatten": lambda x: ops.flatten(x),
    "ops.scatter_add": lambda x: ops.tensor_scatter_elements(x, ti(4, 2, high=6), t(4, 2), 1, "add"),
    "ops.index_add": lambda x: ops.index_add(x, ti(3, high=4), t(3, 6), 0),
    "ops.mul": lambda x: ops.mul(x, x),
    "ops.sum": lambda x: ops.sum(x, -1),
    "ops.sqrt": lambda x: ops.sqrt(ops.abs(x) + 1),
    "ops.exp": lambda x: ops.exp(x),
    "ops.log": lambda x: ops.log(ops.abs(x) + 1),
    "ops.maximum": lambda x: ops.maximum(x, 0.0),
    "ops.clamp": lambda x: ops.clamp(x, -0.5, 0.5),
    "ops.layer_norm": lambda x: ops.layer_norm(x, (6,), Tensor(np.ones(6, np.float32)), Tensor(np.zeros(6, np.float32))),
    "ops.relu6": lambda x: ops.relu6(x),
    "ops.leaky_relu": lambda x: ops.leaky_relu(x, 0.1),
    # mindspore.mint
    "mint.matmul": lambda x: mint.matmul(x, t(6, 3)),
    "mint.bmm": lambda x: mint.bmm(x.reshape(2, 2, 6), t(2, 6, 3)),
    "mint.baddbmm": lambda x: mint.baddbmm(t(2, 2, 3), x.reshape(2, 2, 6), t(2, 6, 3)),
    "mint.addmm": lambda x: mint.addmm(t(3), x, t(6, 3)),
    "mint.outer": lambda x: mint.outer(x[0], x[1]),
    "mint.arange": lambda x: mint.arange(6, dtype=ms.float32) * x,
    "mint.cos": lambda x: mint.cos(x),
    "mint.sin": lambda x: mint.sin(x),
    "mint.cat": lambda x: mint.cat((x, x), -1),
    "mint.stack": lambda x: mint.stack((x, x)),
    "mint.neg": lambda x: mint.neg(x),
    "mint.tril": lambda x: mint.tril(x),
    "mint.triu": lambda x: mint.triu(x),
    "mint.ones": lambda x: mint.ones((4, 6)) * x,
    "mint.zeros_like": lambda x: mint.zeros_like(x) + x,
    "mint.full": lambda x: mint.full((4, 6), 2.0) * x,
    "mint.gt": lambda x: mint.gt(x, 0) * x,
    "mint.lt": lambda x: mint.lt(x, 0) * x,
    "mint.ge": lambda x: mint.ge(x, 0) * x,
    "mint.le": lambda x: mint.le(x, 0) * x,
    "mint.eq": lambda x: mint.eq(x, 0) * x,
    "mint.ne": lambda x: mint.ne(x, 0) * x,
    "mint.logical_and": lambda x: mint.logical_and(x > 0, bmask) * x,
    "mint.logical_or": lambda x: mint.logical_or(x > 0, bmask) * x,
    "mint.logical_not": lambda x: mint.logical_not(bmask) * x,
    "mint.where": lambda x: mint.where(bmask, x, mint.zeros_like(x)),
    "mint.softmax": lambda x: mint.softmax(x, dim=-1),
    "mint.rsqrt": lambda x: mint.rsqrt(mint.abs(x) + 1),
    "mint.mean": lambda x: mint.mean(x, -1, keepdim=True),
    "mint.pow": lambda x: mint.pow(x, 2),
    "mint.sum": lambda x: mint.sum(x, -1),
    "mint.square": lambda x: mint.square(x),
    "mint.sqrt": lambda x: mint.sqrt(mint.abs(x) + 1),
    "mint.exp": lambda x: mint.exp(x),
    "mint.log": lambda x: mint.log(mint.abs(x) + 1),
    "mint.tanh": lambda x: mint.tanh(x),
    "mint.sigmoid": lambda x: mint.sigmoid(x),
    "mint.erf": lambda x: mint.erf(x),
    "mint.topk": lambda x: mint.topk(x, 2)[0],
    "mint.sort": lambda x: mint.sort(x, dim=-1)[0],
    "mint.max dim": lambda x: mint.max(x, 1)[0],
    "mint.min dim": lambda x: mint.min(x, 1)[0],
    "mint.amax": lambda x: mint.amax(x, -1),
    "mint.argmax": lambda x: mint.argmax(x, -1).float().sum() + x,
    "mint.gather": lambda x: mint.gather(x, 1, ti(4, 2, high=6, dtype=ms.int64)),
    "mint.index_select": lambda x: mint.index_select(x, 0, ti(3, high=4, dtype=ms.int64)),
    "mint.scatter_add": lambda x: mint.scatter_add(x, 1, ti(4, 2, high=6, dtype=ms.int64), t(4, 2)),
    "mint.scatter": lambda x: mint.scatter(x, 1, ti(4, 2, high=6, dtype=ms.int64), t(4, 2)),
    "mint.index_add": lambda x: mint.index_add(x, 0, ti(3, high=4), t(3, 6)),
    "mint.repeat_interleave": lambda x: mint.repeat_interleave(x, 2, 0),
    "mint.clamp": lambda x: mint.clamp(x, -0.5, 0.5),
    "mint.flatten": lambda x: mint.flatten(x),
    "mint.maximum": lambda x: mint.maximum(x, t(4, 6)),
    "mint.minimum": lambda x: mint.minimum(x, t(4, 6)),
    "mint.abs": lambda x: mint.abs(x),
    "mint.cumsum": lambda x: mint.cumsum(x, 1),
    "mint.prod": lambda x: mint.prod(x, 1),
    "mint.norm": lambda x: mint.norm(x),
    "mint.linalg.vector_norm": lambda x: mint.linalg.vector_norm(x),
    "mint.einsum": lambda x: mint.einsum("ij,kj->ik", x, x) if hasattr(mint, "einsum") else None,
    "mint.split": lambda x: mint.split(x, 3, -1)[0],
    "mint.chunk": lambda x: mint.chunk(x, 2, -1)[0],
    "mint.permute": lambda x: mint.permute(x, (1, 0)),
    "mint.transpose": lambda x: mint.transpose(x, 0, 1),
    "mint.reshape": lambda x: mint.reshape(x, (6, 4)),
    "mint.unsqueeze": lambda x: mint.unsqueeze(x, 0),
    "mint.squeeze": lambda x: mint.squeeze(mint.unsqueeze(x, 0), 0),
    "mint.add": lambda x: mint.add(x, x, alpha=2),
    "mint.sub": lambda x: mint.sub(x, 1.0),
    "mint.mul": lambda x: mint.mul(x, 2.0),
    "mint.div": lambda x: mint.div(x, 2.0),
    "mint.log_softmax": lambda x: mint.log_softmax(x, -1) if hasattr(mint, "log_softmax") else None,
    "mint.logsumexp": lambda x: mint.logsumexp(x, -1),
    "mint.masked_fill": lambda x: mint.masked_fill(x, bmask, 0.0),
    "mint.clone": lambda x: mint.clone(x),
    "mint.expand_as": lambda x: mint.broadcast_to(x[0], (4, 6)),
    "mint.cosine_similarity": lambda x: mint.cosine_similarity(x, t(4, 6)) if hasattr(mint, "cosine_similarity") else None,
    "mint.floor_divide": lambda x: mint.floor_divide(ti(4, 6, high=9), 2).float() + x,
    "mint.remainder": lambda x: mint.remainder(x, 2.0),
    "mint.round": lambda x: mint.round(x),
    "mint.floor": lambda x: mint.floor(x),
    "mint.sign": lambda x: mint.sign(x),
    "mint.tile": lambda x: mint.tile(x, (2, 1)),
    "mint.isfinite": lambda x: mint.isfinite(x) * x,
    "mint.any": lambda x: mint.any(x > 0).float() + x,
    "mint.all": lambda x: mint.all(x > -10).float() + x,
    "mint.narrow": lambda x: mint.narrow(x, 1, 0, 3),
    "mint.var": lambda x: mint.var(x, -1) if hasattr(mint, "var") else None,
    "mint.std": lambda x: mint.std(x, -1) if hasattr(mint, "std") else None,
    "mint.atan2": lambda x: mint.atan2(x, t(4, 6)),
    # mint.nn.functional
    "F.conv2d": lambda x: F.conv2d(x, w4, None, 1, 1),
    "F.conv2d depthwise": lambda x: F.conv2d(x, dw, None, 1, 1, 1, 3),
    "F.conv_transpose2d": lambda x: F.conv_transpose2d(x, t(3, 2, 2, 2), None, 2),
    "F.batch_norm": lambda x: F.batch_norm(x, rm, rv, g3, b3, True),
    "F.relu": lambda x: F.relu(x),
    "F.relu6": lambda x: F.relu6(x),
    "F.max_pool2d": lambda x: F.max_pool2d(x, 2, 2),
    "F.avg_pool2d": lambda x: F.avg_pool2d(x, 2, 2),
    "F.adaptive_avg_pool2d": lambda x: F.adaptive_avg_pool2d(x, (1, 1)),
    "F.adaptive_max_pool2d": lambda x: F.adaptive_max_pool2d(x, (2, 2)),
    "F.dropout": lambda x: F.dropout(x, 0.1, True),
    "F.dropout2d": lambda x: F.dropout2d(x, 0.1, True),
    "F.linear": lambda x: F.linear(x, t(3, 6), t(3)),
    "F.hardswish": lambda x: F.hardswish(x),
    "F.hardsigmoid": lambda x: F.hardsigmoid(x),
    "F.silu": lambda x: F.silu(x),
    "F.gelu": lambda x: F.gelu(x),
    "F.gelu tanh": lambda x: F.gelu(x, approximate="tanh"),
    "F.sigmoid": lambda x: F.sigmoid(x),
    "F.tanh": lambda x: F.tanh(x),
    "F.softmax": lambda x: F.softmax(x, -1),
    "F.log_softmax": lambda x: F.log_softmax(x, -1),
    "F.group_norm": lambda x: F.group_norm(x, 1, g3, b3),
    "F.layer_norm": lambda x: F.layer_norm(x, (6,)),
    "F.interpolate nearest": lambda x: F.interpolate(x, scale_factor=2.0, mode="nearest"),
    "F.interpolate bilinear": lambda x: F.interpolate(x, size=(16, 16), mode="bilinear", align_corners=False),
    "F.mse_loss": lambda x: F.mse_loss(x, t(4, 6)),
    "F.l1_loss": lambda x: F.l1_loss(x, t(4, 6)),
    "F.smooth_l1_loss": lambda x: F.smooth_l1_loss(x, t(4, 6)),
    "F.binary_cross_entropy": lambda x: F.binary_cross_entropy(F.sigmoid(x), p01),
    "F.binary_cross_entropy_with_logits": lambda x: F.binary_cross_entropy_with_logits(x, p01),
    "F.kl_div": lambda x: F.kl_div(F.log_softmax(x, -1) if False else ops.log_softmax(x, -1), ops.softmax(t(4, 6), -1), reduction="batchmean"),
    "F.cross_entropy int64": lambda x: F.cross_entropy(x, lbl64),
    "F.cross_entropy int32": lambda x: F.cross_entropy(x, lbl),
    "F.nll_loss": lambda x: F.nll_loss(ops.log_softmax(x, -1), lbl64),
    "F.nll_loss int32": lambda x: F.nll_loss(ops.log_softmax(x, -1), lbl),
    "F.one_hot": lambda x: F.one_hot(lbl64, 6).float() * x,
    "F.embedding": lambda x: F.embedding(ti(5, high=4, dtype=ms.int64), x),
    "F.pad": lambda x: F.pad(x, (1, 1)),
    "F.softplus": lambda x: F.softplus(x),
    "F.leaky_relu": lambda x: F.leaky_relu(x, 0.1),
    "F.elu": lambda x: F.elu(x),
    "F.mish": lambda x: F.mish(x),
    "F.glu": lambda x: F.glu(x),
    "F.normalize": lambda x: F.normalize(x),
    "F.logsigmoid": lambda x: F.logsigmoid(x),
    "F.prelu": lambda x: F.prelu(x, Tensor(np.array([0.25], np.float32))),
    # Tensor methods
    "T.masked_fill": lambda x: x.masked_fill(bmask, 0.0),
    "T.float": lambda x: x.astype(ms.float16).float(),
    "T.to": lambda x: x.to(ms.float16),
    "T.sum": lambda x: x.sum(),
    "T.mean": lambda x: x.mean(-1),
    "T.pow": lambda x: x.pow(2),
    "T.exp": lambda x: x.exp(),
    "T.softmax": lambda x: x.softmax(-1),
    "T.view": lambda x: x.view(6, 4),
    "T.reshape": lambda x: x.reshape(6, 4),
    "T.transpose": lambda x: x.transpose(1, 0),
    "T.permute": lambda x: x.permute(1, 0),
    "T.sigmoid": lambda x: x.sigmoid(),
    "T.max": lambda x: x.max(),
    "T.argmax": lambda x: x.argmax(-1).float().sum() + x,
    "T.topk": lambda x: x.topk(2)[0],
    "T.gather": lambda x: x.gather(ti(3, high=4), 0),
    "T.flatten": lambda x: x.flatten(),
    "T.matmul": lambda x: x.matmul(t(6, 3)),
    "T.__matmul__": lambda x: x @ t(6, 3),
    "T.clamp": lambda x: x.clamp(-0.5, 0.5),
    "T.abs": lambda x: x.abs(),
    "T.unsqueeze": lambda x: x.unsqueeze(0),
    "T.expand_as": lambda x: x[0:1].expand_as(x),
    "T.repeat": lambda x: x.repeat(2, 1),
    "T.repeat_interleave": lambda x: x.repeat_interleave(2, 0),
    "T.chunk": lambda x: x.chunk(2, -1)[0],
    "T.square": lambda x: x.square(),
    "T.rsqrt": lambda x: (x.abs() + 1).rsqrt(),
    "T.neg": lambda x: x.neg(),
    "T.tril": lambda x: x.tril(),
    "T.__getitem__": lambda x: x[:, 1:3],
    "T.scatter_add": lambda x: x.scatter_add(1, ti(4, 2, high=6, dtype=ms.int64), t(4, 2)),
    "T.index_add": lambda x: x.index_add(0, ti(3, high=4), t(3, 6)),
    "T.sort": lambda x: x.sort(-1)[0],
    "T.norm": lambda x: x.norm(),
    "T.var": lambda x: x.var(-1),
    "T.std": lambda x: x.std(-1),
    "T.log": lambda x: (x.abs() + 1).log(),
    "T.tanh": lambda x: x.tanh(),
    "T.lt": lambda x: x.lt(0) * x,
    "T.bool": lambda x: x.bool().float() * x,
    "T.int": lambda x: x.int().float() + x,
    "T.long": lambda x: x.long().float() + x,
    "T.type_as": lambda x: x.type_as(x),
    "T.detach": lambda x: x.detach() + x,
    "T.contiguous": lambda x: x.contiguous(),
    "T.__rsub__": lambda x: 1.0 - x,
    "T.__rtruediv__": lambda x: 1.0 / (x.abs() + 1),
    "T.__rpow__": lambda x: 2.0 ** x,
    "T.mul_ inplace": lambda x: (x * 1).mul_(2.0),
    "T.add_ inplace": lambda x: (x * 1).add_(x),
}


def first_line(e):
    lines = [ln.strip() for ln in str(e).splitlines()]
    return next((ln for ln in lines if ln and not ln.startswith("-")), "")[:160]


FOURD = ("conv", "batch_norm", "pool", "interpolate", "group_norm", "dropout2d")


def run(name, fn):
    x = x4 if any(k in name for k in FOURD) else x2
    try:
        out = fn(x)
        if out is None:
            return "MISSING", "not in this build"
        # PyNative runs asynchronously: a missing kernel surfaces at the next sync, so sync here
        (out[0] if isinstance(out, (tuple, list)) else out).asnumpy()
    except Exception as e:  # noqa: BLE001
        return "FWD-FAIL", first_line(e)
    try:
        def f(a):
            o = fn(a)
            return o.astype(ms.float32).sum()
        _, g = ms.value_and_grad(f)(x)
        g.asnumpy()
    except Exception as e:  # noqa: BLE001
        return "BWD-FAIL", first_line(e)
    return "OK", ""


def child(names):
    """Run the cases in order; stop at the first failure (a failed kernel can leave the
    PyNative executor in an error state that later, unrelated ops report again)."""
    for name in names:
        status, msg = run(name, CASES[name])
        print(f"{status:9s} {name:40s} {msg}", flush=True)
        if status != "OK":
            return 3
    return 0


if __name__ == "__main__":
    import os
    import subprocess
    if os.environ.get("PROBE_CHILD"):
        sys.exit(child(sys.argv[1:]))
    filt = sys.argv[1:]
    todo = [n for n in CASES if not filt or any(f in n for f in filt)]
    while todo:
        out = subprocess.run([sys.executable, __file__] + todo, env=dict(os.environ, PROBE_CHILD="1"),
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
        done = [ln for ln in out.splitlines() if ln[:9].strip() in ("OK", "FWD-FAIL", "BWD-FAIL", "MISSING")]
        for ln in done:
            print(ln, flush=True)
        if not done:  # crashed before printing anything: record and move on
            print(f"{'CRASH':9s} {todo[0]:40s}", flush=True)
            done = [todo[0]]
        todo = todo[len(done):]
