"""torch compositions in float64 of the `NPU.` ops of runtime/src/ops/npu_misc.rs, written
from torch_npu's documented semantics and independent of the runtime, of msprobe's bench
functions and of the scripts' references (python/msprobe_rs/repro/npu_bench.py): the first
oracle of runtime/tests/npu_misc_agreement.rs (reference.py) and of npu_bench's unit test
(python/tests/test_npu_bench.py). Keyed by op name, each with torch_npu's signature.
"""

import torch


def linear(x, w, b=None):
    y = torch.mm(x, w.t())
    return y if b is None else y + b


def confusion_transpose(x, perm, shape, transpose_first):
    if transpose_first:
        return torch.reshape(torch.permute(x, perm), shape)
    return torch.permute(torch.reshape(x, shape), perm)


def apply_adam(b1p, b2p, lr, b1, b2, eps, grad, use_locking, use_nesterov, out):
    var, m, v = out
    m_t = b1 * m + (1 - b1) * grad
    v_t = b2 * v + (1 - b2) * grad * grad
    alpha = lr * (1 - b2p) ** 0.5 / (1 - b1p)
    step = b1 * m_t + (1 - b1) * grad if use_nesterov else m_t
    return var - alpha * step / (v_t.sqrt() + eps), m_t, v_t


def apply_adam_w(b1p, b2p, lr, wd, b1, b2, eps, grad, max_grad_norm, amsgrad, maximize, out):
    var, m, v = out
    g = -grad if maximize else grad
    m_t = b1 * m + (1 - b1) * g
    v_t = b2 * v + (1 - b2) * g * g
    second = torch.maximum(max_grad_norm, v_t) if amsgrad else v_t
    m_hat = m_t / (1 - b1p * b1)
    v_hat = second / (1 - b2p * b2)
    return var * (1 - lr * wd) - lr * m_hat / (v_hat.sqrt() + eps), m_t, v_t


def layer_norm_eval(x, shape, weight=None, bias=None, eps=1e-5):
    dims = list(range(-len(shape), 0))
    mean = x.mean(dims, keepdim=True)
    var = ((x - mean) ** 2).mean(dims, keepdim=True)
    y = (x - mean) / torch.sqrt(var + eps)
    if weight is not None:
        y = y * weight
    return y if bias is None else y + bias


def group_norm_silu(x, weight, bias, group, eps=1e-5):
    n, c = x.shape[:2]
    flat = x.reshape(n, group, -1)
    mean = flat.mean(-1, keepdim=True)
    var = ((flat - mean) ** 2).mean(-1, keepdim=True)
    rstd = 1 / torch.sqrt(var + eps)
    y = ((flat - mean) * rstd).reshape(x.shape)
    shape = [1, c] + [1] * (x.dim() - 2)
    y = y * weight.reshape(shape) + bias.reshape(shape)
    return y * torch.sigmoid(y), mean.reshape(n, group), rstd.reshape(n, group)


def moe_gating_top_k_softmax(x, finished=None, k=1):
    p = torch.exp(x - x.max(-1, keepdim=True).values)
    p = p / p.sum(-1, keepdim=True)
    y, idx = torch.topk(p, k, dim=-1)
    rows = x.shape[0]
    if finished is not None:
        idx = torch.where(finished.reshape(rows, 1), x.shape[-1], idx)
    row_idx = torch.arange(k).reshape(1, k) * rows + torch.arange(rows).reshape(rows, 1)
    return y, idx.to(torch.int32), row_idx.to(torch.int32)


def sort_v2(x, dim=-1, descending=False):
    return torch.sort(x, dim=dim, descending=descending, stable=True).values


def matmul_backward(grad, a, b, mask):
    a_, b_ = a.detach().clone().requires_grad_(True), b.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        ga, gb = torch.autograd.grad(torch.matmul(a_, b_), [a_, b_], grad)
    return (ga if mask[0] else None), (gb if mask[1] else None)


COMPOSITIONS = {
    "npu_linear": linear,
    "npu_confusion_transpose": confusion_transpose,
    "npu_apply_adam": apply_adam,
    "npu_apply_adam_w": apply_adam_w,
    "npu_layer_norm_eval": layer_norm_eval,
    "npu_group_norm_silu": group_norm_silu,
    "npu_moe_gating_top_k_softmax": moe_gating_top_k_softmax,
    "npu_sort_v2": sort_v2,
    "matmul_backward": matmul_backward,
}
