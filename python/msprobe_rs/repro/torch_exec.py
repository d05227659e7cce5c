"""torch execution: the PyTorch tested side and every bench. A Master tree
becomes torch values (tensors rounded to the dumped dtype, then raised for
the bench), the call runs forward and, for a backward script, backward with
torch.autograd.grad w.r.t. the float inputs.
"""

import numpy as np
import torch

from .compare import scalar_leaf
from .data_generate import Device, DType, Master, MemoryFormat, Size, Unsupported, any_marked, dtype_info, wants_grad

# --- msprobe-rs: the scripts inline this file from here ---


RAISE_PRECISION = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.float32: torch.float64, torch.complex64: torch.complex128}
MEMORY_FORMATS = {"contiguous_format": torch.contiguous_format, "channels_last": torch.channels_last,
                  "channels_last_3d": torch.channels_last_3d, "preserve_format": torch.preserve_format}


def torch_dtype(name):
    return getattr(torch, dtype_info(name)[0])


def to_torch(value, device, raise_precision, exact_op=False):
    """A torch value from a Master tree: tensors rounded to the dumped dtype
    first (so both sides start from the same numbers), then raised for the
    bench, and dtype arguments raised the same way (softmax(x, dtype=float32)
    computes in float64 on the bench), except for ops that must match bit for
    bit (exact_op, the script's EXACT_OP: arange(0, 1, 0.1, dtype=float32)
    makes float32 values)."""
    if isinstance(value, Master):
        dtype = torch_dtype(value.spec.dtype)
        tensor = torch.from_numpy(np.array(value.array, order="C")).to(dtype)  # np.array keeps 0-d shapes
        if raise_precision:
            tensor = tensor.to(RAISE_PRECISION.get(dtype, dtype))
        return tensor.to(device)
    if isinstance(value, DType):
        dtype = torch_dtype(value.name)
        return RAISE_PRECISION.get(dtype, dtype) if raise_precision and not exact_op else dtype
    if isinstance(value, Device):
        return torch.device(device)
    if isinstance(value, Size):
        return torch.Size(value.dims)
    if isinstance(value, MemoryFormat):
        return MEMORY_FORMATS[value.name]
    if isinstance(value, Unsupported):
        return None
    if isinstance(value, list):
        return [to_torch(v, device, raise_precision, exact_op) for v in value]
    if isinstance(value, tuple):
        return tuple(to_torch(v, device, raise_precision, exact_op) for v in value)
    if isinstance(value, dict):
        return {k: to_torch(v, device, raise_precision, exact_op) for k, v in value.items()}
    return value


def flatten_outputs(out):
    if isinstance(out, (list, tuple)):
        return [leaf for item in out for leaf in flatten_outputs(item)]
    return [out]


def torch_run(fn, args, kwargs, grad_outputs, device, raise_precision, exact_op=False):
    """Runs fn forward and, when grad_outputs is given, backward with
    torch.autograd.grad. Returns (outputs, gradients w.r.t. the inputs or None)."""
    backward = grad_outputs is not None
    marked = any_marked(list(args) + list(kwargs.values()))
    leaves = []

    def convert(value):
        if isinstance(value, (list, tuple)):  # tensors inside a list (cat, stack) are differentiated too
            items = [convert(v) for v in value]
            return items if isinstance(value, list) else tuple(items)
        tensor = to_torch(value, device, raise_precision, exact_op)
        if backward and isinstance(value, Master) and wants_grad(value, marked):
            tensor.requires_grad_(True)
            leaves.append(tensor)
            return tensor.clone()  # a non-leaf copy, so in-place APIs can run
        return tensor

    call_args = [convert(a) for a in args]
    call_kwargs = {k: convert(v) for k, v in kwargs.items()}
    with torch.set_grad_enabled(backward):
        out = fn(*call_args, **call_kwargs)
    if out is None and call_args:
        out = call_args[0]  # an in-place API such as __setitem__: compare the updated self
    outputs = flatten_outputs(out)
    if not backward:
        return outputs, None
    if not leaves:
        raise ValueError("backward: no floating-point input to differentiate")
    pairs = []
    for i, o in enumerate(outputs):
        g = grad_outputs[i] if i < len(grad_outputs) else None
        if isinstance(o, torch.Tensor) and o.requires_grad and isinstance(g, Master):
            grad = to_torch(g, device, raise_precision, exact_op).to(o.dtype)
            if grad.shape != o.shape:
                if grad.numel() != o.numel():
                    raise ValueError(f"backward: dumped gradient {i} has shape {tuple(grad.shape)}, output has {tuple(o.shape)}")
                grad = grad.reshape(o.shape)
            pairs.append((o, grad))
    if not any(isinstance(g, Master) for g in grad_outputs[:len(outputs)]):
        raise ValueError("backward: no output has a dumped gradient")
    if pairs:
        grads = torch.autograd.grad([o for o, _ in pairs], leaves, [g for _, g in pairs], allow_unused=True)
    else:  # no output depends differentiably on the inputs (one_hot's on/off values): zero gradients
        grads = [None] * len(leaves)
    grads = [torch.zeros_like(leaf) if g is None else g for g, leaf in zip(grads, leaves)]
    return [o.detach() if isinstance(o, torch.Tensor) else o for o in outputs], grads


def torch_leaf(value, dtype_label=str):
    """(dtype label, float64 array or None) of one torch output, for comparison."""
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu()
        if tensor.is_complex():
            tensor = torch.view_as_real(tensor)
        return dtype_label(value.dtype), tensor.to(torch.float64).numpy()
    return scalar_leaf(value)
