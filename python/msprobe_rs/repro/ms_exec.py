"""MindSpore execution, for the sides whose tested call runs on MindSpore
(mindspore_side, and mindtorch_side for MSAdapter, whose tensors are
MindSpore's): a Master tree becomes MindSpore values, the call runs forward
and, for a backward script, backward with mindspore.vjp w.r.t. the float
inputs; the device, the api standard's reference, the leaves compared and
the seeds of a MindSpore-tested side.
"""

import mindspore
import numpy as np
import torch

from ._tables import MS_NAMES
from .compare import scalar_leaf
from .data_generate import Device, DType, Master, MemoryFormat, Size, Unsupported, any_marked, dtype_info, wants_grad
from .torch_exec import flatten_outputs, torch_leaf

# --- msprobe-rs: the scripts inline this file from here ---


def ms_dtype(name):
    return getattr(mindspore, dtype_info(name)[0])


def to_mindspore(value):
    """A MindSpore value from a Master tree, in the dumped dtype."""
    if isinstance(value, Master):
        canon, kind = dtype_info(value.spec.dtype)
        if canon == "bfloat16":
            return mindspore.Tensor(value.array.astype(np.float32)).astype(mindspore.bfloat16)
        return mindspore.Tensor(value.array.astype(np.dtype(canon)))
    if isinstance(value, DType):
        return ms_dtype(value.name)
    if isinstance(value, Size):
        return tuple(value.dims)
    if isinstance(value, (Device, MemoryFormat, Unsupported)):
        return None
    if isinstance(value, (list, tuple)):
        # JSON cannot tell tuples from lists; MindSpore APIs want tuples (shapes, axes).
        return tuple(to_mindspore(v) for v in value)
    if isinstance(value, dict):
        return {k: to_mindspore(v) for k, v in value.items()}
    return value


def ms_zeros_like(tensor):
    return mindspore.Tensor(np.zeros(tensor.shape, dtype=np.float32)).astype(tensor.dtype)


def grad_slots(value, path, marked, slots):
    """The paths of the tensors to differentiate in value, tensors inside
    lists (cat, stack) included, in the order torch_run makes its leaves."""
    if isinstance(value, Master):
        if wants_grad(value, marked):
            slots.append(path)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            grad_slots(item, path + (i,), marked, slots)


def at_path(value, path):
    for key in path:
        value = value[key]
    return value


def with_replaced(value, path, new):
    """value with the item at path replaced (lists and tuples are copied)."""
    if not path:
        return new
    items = list(value)
    items[path[0]] = with_replaced(items[path[0]], path[1:], new)
    return tuple(items) if isinstance(value, tuple) else items


def ms_run(fn, args, kwargs, grad_outputs, convert=to_mindspore):
    """Runs fn forward and, when grad_outputs is given, backward with
    mindspore.vjp w.r.t. the float inputs (tensors inside lists too); convert
    makes the call's values from the Master trees (MindSpore's tensors, or
    MSAdapter's, which MindSpore's autograd differentiates the same way)."""
    call_args = [convert(a) for a in args]
    call_kwargs = {k: convert(v) for k, v in kwargs.items()}
    if grad_outputs is None:
        out = fn(*call_args, **call_kwargs)
        if out is None and call_args:
            out = call_args[0]
        return flatten_outputs(out), None
    marked = any_marked(list(args) + list(kwargs.values()))
    slots = []
    for i, a in enumerate(args):
        grad_slots(a, (i,), marked, slots)
    for k, v in kwargs.items():
        grad_slots(v, (k,), marked, slots)
    if not slots:
        raise ValueError("backward: no floating-point input to differentiate")

    def with_inputs(*diff):
        full_args, full_kwargs = list(call_args), dict(call_kwargs)
        for path, tensor in zip(slots, diff):
            if isinstance(path[0], int):
                full_args[path[0]] = with_replaced(full_args[path[0]], path[1:], tensor)
            else:
                full_kwargs[path[0]] = with_replaced(full_kwargs[path[0]], path[1:], tensor)
        return fn(*full_args, **full_kwargs)

    primals = [at_path(call_args if isinstance(path[0], int) else call_kwargs, path) for path in slots]
    out, vjp_fn = mindspore.vjp(with_inputs, *primals)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    sens = []
    for i, o in enumerate(outs):
        g = grad_outputs[i] if i < len(grad_outputs) else None
        if isinstance(g, Master):
            grad = convert(g).astype(o.dtype)
            if tuple(grad.shape) != tuple(o.shape):
                grad = grad.reshape(o.shape)
            sens.append(grad)
        else:
            sens.append(ms_zeros_like(o))
    grads = vjp_fn(tuple(sens) if isinstance(out, (tuple, list)) else sens[0])
    grads = list(grads) if isinstance(grads, (tuple, list)) else [grads]
    return flatten_outputs(out), grads


def select_device(requested):
    if requested:
        mindspore.set_device(requested)
    return mindspore.get_context("device_target")


def reference_is_tested(device):
    """Whether the api standard's reference run (the CPU in the dumped dtype)
    is the tested run itself."""
    return str(device).lower() == "cpu"


def reference_leaves(call, args, kwargs, grad_outputs, device, tested_leaves):
    """The api standard's reference: the tested function on the CPU in the
    dumped dtype. That is the tested run itself on the CPU target; elsewhere
    there is none (MindSpore runs on one target per process)."""
    return tested_leaves if reference_is_tested(device) else (None, None)


def ms_dtype_label(dtype):
    """MindSpore's name of a tensor's dtype: MindSpore's own (``Float32``), also
    for MSAdapter's dtypes, whose text is mindtorch's (``mindtorch.float32``)."""
    text = str(dtype)
    return MS_NAMES.get(text.rpartition(".")[2], text) if "." in text else text


def tested_leaf(value):
    if isinstance(value, mindspore.Tensor):
        label = ms_dtype_label(value.dtype)
        if value.dtype == mindspore.bfloat16:
            value = value.astype(mindspore.float32)
        return label, value.asnumpy().astype(np.float64)
    return scalar_leaf(value)


def bench_leaf(value):
    return torch_leaf(value, dtype_label=ms_dtype_label)


def seed_frameworks(seed):
    mindspore.set_seed(seed)
    torch.manual_seed(seed)
