"""torch equivalents of MindSpore signatures for the bench: the bench table
(runtime/src/ops/bench.rs, MINDSPORE_HELPERS; rendered into
_tables.MS_BENCH_HELPERS) names one of these where a MindSpore API's
signature, defaults or index dtypes differ from the torch function of its
name. Each takes MindSpore's argument names.
"""

import torch

from .data_generate import Master
from .npu_bench import ref_npu_fast_gelu, ref_npu_fusion_attention, ref_npu_rms_norm, ref_npu_rotary_mul, ref_npu_swiglu

# --- msprobe-rs: the scripts inline this file from here ---


def ms_ops_gather(input_params, input_indices, axis, batch_dims=0):
    """torch equivalent of mindspore.ops.gather: whole slices along `axis`."""
    if batch_dims:
        raise NotImplementedError("ms_ops_gather: batch_dims is not supported")
    axis = axis % input_params.dim()
    picked = torch.index_select(input_params, axis, input_indices.reshape(-1).long())
    shape = tuple(input_params.shape[:axis]) + tuple(input_indices.shape) + tuple(input_params.shape[axis + 1:])
    return picked.reshape(shape)


def ms_tensor_transpose(tensor, *axes):
    """torch equivalent of mindspore.Tensor.transpose(*axes), a numpy-style permutation."""
    if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
        axes = tuple(axes[0])
    if not axes:
        axes = tuple(reversed(range(tensor.dim())))
    return tensor.permute(*axes)


def as_int64(tensor):
    """Integer indices as torch's index and loss kernels want them (MindSpore takes Int32)."""
    return tensor.long() if isinstance(tensor, torch.Tensor) and not tensor.is_floating_point() else tensor


def pair_of(value):
    """An int or a sequence as two per-dim values (a 4-value NCHW stride or dilation keeps its last two)."""
    if isinstance(value, int):
        return (value, value)
    value = tuple(value)
    return value[-2:] if len(value) == 4 else (value * 2 if len(value) == 1 else value)


def ms_ops_conv2d(input, weight, bias=None, stride=1, pad_mode="valid", padding=0, dilation=1, groups=1):
    """torch equivalent of mindspore.ops.conv2d: pad_mode 'valid' (no padding),
    'same' (output size ceil(in / stride), the odd padding at the bottom and
    right, any stride) or 'pad' (padding: one int or (height, width))."""
    stride, dilation = pair_of(stride), pair_of(dilation)
    if pad_mode == "pad":
        (top, left) = pair_of(padding)
        bottom, right = top, left
    elif pad_mode == "same":
        pads = []
        for size, k, s, d in zip(input.shape[-2:], weight.shape[-2:], stride, dilation):
            total = max((-(-size // s) - 1) * s + d * (k - 1) + 1 - size, 0)
            pads.append((total // 2, total - total // 2))
        (top, bottom), (left, right) = pads
    elif pad_mode == "valid":
        top = bottom = left = right = 0
    else:
        raise ValueError(f"ms_ops_conv2d: pad_mode must be 'valid', 'same' or 'pad', got {pad_mode!r}")
    padded = torch.nn.functional.pad(input, (left, right, top, bottom))
    return torch.nn.functional.conv2d(padded, weight, bias, stride, 0, dilation, groups)


def ms_ops_cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """torch equivalent of mindspore.ops.cross_entropy: class indices as int64."""
    return torch.nn.functional.cross_entropy(input, as_int64(target), weight, ignore_index=ignore_index,
                                             reduction=reduction, label_smoothing=label_smoothing)


def ms_ops_nll_loss(inputs, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """torch equivalent of mindspore.ops.nll_loss: class indices as int64, and
    MindSpore's label_smoothing, which torch's nll_loss lacks (mixes in
    -sum_c w[c] * inputs[c] / C as torch's cross_entropy does)."""
    target = as_int64(target)
    nll = torch.nn.functional.nll_loss(inputs, target, weight, ignore_index=ignore_index, reduction=reduction)
    if not label_smoothing:
        return nll
    classes = inputs.shape[1] if inputs.dim() > 1 else inputs.shape[0]
    class_dim = 1 if inputs.dim() > 1 else 0
    w = weight if weight is not None else torch.ones(classes, dtype=inputs.dtype)
    shape = [1] * inputs.dim()
    shape[class_dim] = classes
    kept = target != ignore_index
    smooth = -(inputs * w.reshape(shape)).sum(class_dim) * kept
    if reduction == "none":
        pass
    elif reduction == "sum":
        smooth = smooth.sum()
    else:
        picked = w[torch.where(kept, target, 0)] * kept
        smooth = smooth.sum() / picked.sum()
    return (1 - label_smoothing) * nll + label_smoothing * smooth / classes


def ms_ops_binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction="mean"):
    """torch equivalent of mindspore.ops.binary_cross_entropy_with_logits, whose
    third and fourth positional arguments are weight and pos_weight."""
    return torch.nn.functional.binary_cross_entropy_with_logits(input, target, weight, reduction=reduction,
                                                                pos_weight=pos_weight)


def ms_mint_binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """torch equivalent of mindspore.mint.nn.functional.binary_cross_entropy (reduction third after weight)."""
    return torch.nn.functional.binary_cross_entropy(input, target, weight, reduction=reduction)


def ms_ops_l1_loss(input, target, reduction="mean"):
    """torch equivalent of mindspore.ops.l1_loss (reduction third)."""
    return torch.nn.functional.l1_loss(input, target, reduction=reduction)


def ms_ops_mse_loss(input, target, reduction="mean"):
    """torch equivalent of mindspore.ops.mse_loss (reduction third)."""
    return torch.nn.functional.mse_loss(input, target, reduction=reduction)


def ms_ops_smooth_l1_loss(input, target, beta=1.0, reduction="none"):
    """torch equivalent of mindspore.ops.smooth_l1_loss: beta third, reduction 'none' by default."""
    return torch.nn.functional.smooth_l1_loss(input, target, reduction=reduction, beta=beta)


def ms_ops_kl_div(logits, labels, reduction="mean"):
    """torch equivalent of mindspore.ops.kl_div (reduction third)."""
    return torch.nn.functional.kl_div(logits, labels, reduction=reduction)


def ms_ops_one_hot(indices, depth, on_value=1, off_value=0, axis=-1):
    """torch equivalent of mindspore.ops.one_hot: on and off values (tensors
    or numbers, their dtype is the output's) and the axis of the new dim.
    MindSpore's gradient w.r.t. on_value and off_value is zero (its dump
    records none): they are constants here too."""
    hot = torch.nn.functional.one_hot(as_int64(indices), depth).bool()
    on = on_value.detach() if isinstance(on_value, torch.Tensor) else torch.tensor(on_value)
    off = off_value.detach() if isinstance(off_value, torch.Tensor) else torch.tensor(off_value, dtype=on.dtype)
    out = torch.where(hot, on, off.to(on.dtype))
    return out.movedim(-1, axis) if axis != -1 else out


def ms_ops_index_add(x, indices, y, axis, use_lock=True, check_index_bound=True):
    """torch equivalent of mindspore.ops.index_add(x, indices, y, axis): torch.index_add(x, axis, indices, y)."""
    return torch.index_add(x, axis, as_int64(indices), y)


def ms_ops_tensor_scatter_elements(input_x, indices, updates, axis=0, reduction="none"):
    """torch equivalent of mindspore.ops.tensor_scatter_elements: scatter
    ('none') or scatter-add ('add') of updates along axis."""
    if reduction == "none":
        return torch.scatter(input_x, axis, as_int64(indices), updates)
    if reduction == "add":
        return torch.scatter_add(input_x, axis, as_int64(indices), updates)
    raise ValueError(f"ms_ops_tensor_scatter_elements: reduction must be 'none' or 'add', got {reduction!r}")


def ms_ops_clip_by_global_norm(x, clip_norm=1.0, use_norm=None):
    """torch equivalent of mindspore.ops.clip_by_global_norm: every tensor
    scaled by clip_norm / max(global norm, clip_norm)."""
    tensors = list(x) if isinstance(x, (list, tuple)) else [x]
    norm = use_norm if use_norm is not None else torch.sqrt(sum((t * t).sum() for t in tensors))
    scale = clip_norm / torch.maximum(torch.as_tensor(norm, dtype=tensors[0].dtype), torch.as_tensor(clip_norm, dtype=tensors[0].dtype))
    clipped = tuple(t * scale for t in tensors)
    return clipped if isinstance(x, (list, tuple)) else clipped[0]


def ms_ops_assign(variable, value):
    """torch equivalent of mindspore.ops.assign: variable takes value's values and is returned."""
    return variable.copy_(value)


def ms_tensor_variance(fn, input, args, kwargs):
    """torch.var or torch.std as mindspore.Tensor.var/std computes them:
    (axis=None, ddof=0, keepdims=False), also spelled with dim, correction
    and keepdim; MindSpore 2.10 divides by N - ddof with ddof 0 unless told
    otherwise (torch's correction is 1 by default)."""
    bound = dict(zip(["axis", "ddof", "keepdims"], args))
    for ms_name, alias in (("axis", "dim"), ("ddof", "correction"), ("keepdims", "keepdim")):
        for name in (ms_name, alias):
            if kwargs.get(name) is not None:
                bound[ms_name] = kwargs[name]
    dim = bound.get("axis")
    dim = tuple(dim) if isinstance(dim, (list, tuple)) else dim
    return fn(input, dim=dim, correction=bound.get("ddof", 0), keepdim=bool(bound.get("keepdims", False)))


def ms_tensor_var(input, *args, **kwargs):
    """torch equivalent of mindspore.Tensor.var (see ms_tensor_variance)."""
    return ms_tensor_variance(torch.var, input, args, kwargs)


def ms_tensor_std(input, *args, **kwargs):
    """torch equivalent of mindspore.Tensor.std (see ms_tensor_variance)."""
    return ms_tensor_variance(torch.std, input, args, kwargs)


def _ms_dims(axis, every=()):
    """MindSpore's axis as torch's dim: None (every dimension) as `every`, a list as a tuple."""
    return every if axis is None else tuple(axis) if isinstance(axis, (list, tuple)) else axis


def _ms_extreme(fn, input, axis, keepdims, initial, where):
    """torch's amax or amin under mindspore.ops's signature (keepdims; initial and where not replayed)."""
    if initial is not None or where is not None:
        raise NotImplementedError(f"mindspore.ops.{fn.__name__}: initial and where are not supported")
    return fn(input, dim=_ms_dims(axis), keepdim=bool(keepdims))


def ms_ops_amax(input, axis=None, keepdims=False, *, initial=None, where=None):
    """torch equivalent of mindspore.ops.amax."""
    return _ms_extreme(torch.amax, input, axis, keepdims, initial, where)


def ms_ops_amin(input, axis=None, keepdims=False, *, initial=None, where=None):
    """torch equivalent of mindspore.ops.amin."""
    return _ms_extreme(torch.amin, input, axis, keepdims, initial, where)


def ms_ops_nansum(input, axis=None, keepdims=False, *, dtype=None):
    """torch equivalent of mindspore.ops.nansum (keepdims)."""
    return torch.nansum(input, dim=_ms_dims(axis, None), keepdim=bool(keepdims), dtype=dtype)


def ms_ops_nanmean(input, axis=None, keepdims=False, *, dtype=None):
    """torch equivalent of mindspore.ops.nanmean (keepdims)."""
    return torch.nanmean(input, dim=_ms_dims(axis, None), keepdim=bool(keepdims), dtype=dtype)


def ms_ops_var_mean(input, axis=None, ddof=0, keepdims=False):
    """torch equivalent of mindspore.ops.var_mean: ddof 0 by default (torch's correction is 1)."""
    return torch.var_mean(input, dim=_ms_dims(axis, None), correction=ddof, keepdim=bool(keepdims))


def ms_ops_std_mean(input, axis=None, ddof=0, keepdims=False):
    """torch equivalent of mindspore.ops.std_mean: ddof 0 by default (torch's correction is 1)."""
    return torch.std_mean(input, dim=_ms_dims(axis, None), correction=ddof, keepdim=bool(keepdims))


# What the last tested run did (args, kwargs, outputs, grads), set by the
# MindSpore side after each tested run, for the helpers that follow it.
TESTED_RUN = {}


def ms_ops_dropout(input, p=0.5, training=True, seed=None):
    """torch equivalent of mindspore.ops.dropout with the tested call's mask:
    MindSpore and torch draw different random masks, so the bench keeps the
    elements the tested run kept (tested_kept) and scales them by 1 / (1 - p)."""
    if not training or p == 0:
        return input
    kept = tested_kept()
    if kept is None or tuple(kept.shape) != tuple(input.shape):
        raise ValueError("ms_ops_dropout: the tested run's mask is unknown")
    return input * torch.from_numpy(kept).to(input.dtype) / (1 - p)


def tested_kept():
    """The tested dropout's mask (a bool array, None before a tested run):
    kept where its output is non-zero, and where the input is zero, where its
    gradient is non-zero."""
    if "outputs" not in TESTED_RUN:
        return None
    args, kwargs, outputs, grads = (TESTED_RUN[k] for k in ("args", "kwargs", "outputs", "grads"))
    source = args[0] if args else kwargs.get("input")
    kept = outputs[0].asnumpy() != 0
    if grads and isinstance(source, Master):
        kept |= (source.array == 0) & (grads[0].asnumpy() != 0)
    return kept


# MindSpore's fused ops (mindspore.ops): torch_npu's references of the same Ascend operators,
# under MindSpore's names and signatures.


def ms_ops_rms_norm(x, gamma, epsilon=1e-6):
    """torch equivalent of mindspore.ops.rms_norm: (y, rstd), rstd float32."""
    return ref_npu_rms_norm(x, gamma, epsilon)


def ms_ops_swiglu(input, dim=-1):  # noqa: A002 (MindSpore's argument name)
    """torch equivalent of mindspore.ops.swiglu: silu(a) * b for the halves of input along dim."""
    return ref_npu_swiglu(input, dim)


def ms_ops_fast_gelu(x):
    """torch equivalent of mindspore.ops.fast_gelu."""
    return ref_npu_fast_gelu(x)


def ms_ops_rotary_position_embedding(x, cos, sin, mode=0):
    """torch equivalent of mindspore.ops.rotary_position_embedding: mode 0 rotates the
    halves of the last dim, mode 1 interleaved pairs."""
    if mode not in (0, 1):
        raise ValueError(f"rotary_position_embedding: mode must be 0 or 1, got {mode!r}")
    return ref_npu_rotary_mul(x, cos, sin, "half" if mode == 0 else "interleave")


def ms_ops_flash_attention_score(query, key, value, head_num, real_shift=None, drop_mask=None, padding_mask=None,
                                 attn_mask=None, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None,
                                 keep_prob=1.0, scalar_value=1.0, pre_tokens=2147483647, next_tokens=2147483647,
                                 inner_precise=0, input_layout="BSH", sparse_mode=0):
    """torch equivalent of mindspore.ops.flash_attention_score: attention_out."""
    return ref_npu_fusion_attention(query, key, value, head_num, input_layout, pse=real_shift,
                                    padding_mask=padding_mask, atten_mask=attn_mask, scale=scalar_value,
                                    keep_prob=keep_prob, pre_tockens=pre_tokens, next_tockens=next_tokens,
                                    inner_precise=inner_precise, prefix=prefix, actual_seq_qlen=actual_seq_qlen,
                                    actual_seq_kvlen=actual_seq_kvlen, sparse_mode=sparse_mode)[0]
