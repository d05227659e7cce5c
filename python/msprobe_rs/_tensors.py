"""Tensors of any supported kind → (the array to save, msprobe's statistics).

Supported: ``torch.Tensor``, ``mindspore.Tensor`` (and ``Parameter``) and
``numpy.ndarray``. The frameworks are looked up in ``sys.modules`` and
never imported: if torch has not been imported, nothing can be a torch
tensor.

Statistics follow msprobe (``FmkAdp.process_tensor``): an integer, bool or
float64 tensor is reduced in float32; float32, float16 and bfloat16 are
reduced in their own dtype, so bf16/fp16 figures are rounded to bf16/fp16.
"""

import math
import sys

import numpy as np

# numpy kinds saved and reduced as they are: bool, signed, unsigned, float.
_REAL_KINDS = "biuf"


def _framework(name):
    """The module if the user imported it, else None (never imports)."""
    return sys.modules.get(name)


def is_torch_tensor(value):
    torch = _framework("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def is_mindspore_tensor(value):
    ms = _framework("mindspore")
    return ms is not None and isinstance(value, getattr(ms, "Tensor", ()))


def is_tensor(value):
    return isinstance(value, np.ndarray) or is_torch_tensor(value) or is_mindspore_tensor(value)


def describe(value):
    """`module.Class` of a value, for error messages."""
    t = type(value)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def round_bf16(x):
    """The bfloat16 nearest to float `x` (round half to even), as a float."""
    if math.isnan(x) or math.isinf(x):
        return x
    bits = np.array([x], dtype=np.float32).view(np.uint32)
    bits = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return float(bits.view(np.float32)[0])


def _c_order(arr):
    # np.ascontiguousarray turns a 0-d array into 1-d; copy keeps the shape.
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def _empty_stats():
    # msprobe raises on an empty tensor (max of nothing); we record it.
    return {"max": None, "min": None, "mean": None, "norm": 0.0}


def _numpy_stats(x32, round_to=None):
    """max/min/mean/norm of a float32 array, optionally rounded to fp16/bf16."""
    flat = x32.ravel()
    figures = [flat.max(), flat.min(), flat.mean(dtype=np.float32), np.sqrt(np.dot(flat, flat))]
    out = []
    for v in figures:
        v = float(np.float32(v))
        if round_to == "float16":
            v = float(np.float16(v))
        elif round_to == "bfloat16":
            v = round_bf16(v)
        out.append(v)
    return dict(zip(("max", "min", "mean", "norm"), out))


def _prepare_numpy(a):
    dt = a.dtype
    bf16 = dt.name == "bfloat16"  # ml_dtypes / MindSpore's numpy bfloat16 (kind 'V')
    if not bf16 and dt.kind not in _REAL_KINDS:
        raise TypeError(f"arrays of dtype {dt} are not supported (bool, integer or real floating point only)")
    arr = a.astype(np.float32) if bf16 else a
    if a.size == 0:
        stats = _empty_stats()
    elif bf16:
        stats = _numpy_stats(arr, "bfloat16")
    elif dt == np.float16:
        stats = _numpy_stats(a.astype(np.float32), "float16")
    else:
        stats = _numpy_stats(a.astype(np.float32, copy=False))
    stats["shape"] = list(a.shape)
    return _c_order(np.asarray(arr)), stats


def _prepare_torch(t):
    torch = sys.modules["torch"]
    t = t.detach()
    if t.is_complex():
        raise TypeError(f"complex tensors ({t.dtype}) are not supported")
    # msprobe's FmkAdp.process_tensor: integers, bool and float64 reduce in float32.
    r = t if (t.is_floating_point() and t.dtype != torch.float64) else t.float()
    if t.numel() == 0:
        stats = _empty_stats()
    else:
        stats = {"max": float(r.max()), "min": float(r.min()), "mean": float(r.mean()), "norm": float(r.norm())}
    stats["shape"] = list(t.shape)
    c = t.cpu()
    if c.dtype == torch.bfloat16:
        arr = c.float().numpy()  # numpy has no bfloat16; float32 holds every bf16 exactly
    else:
        try:
            arr = c.resolve_conj().resolve_neg().numpy()
        except (TypeError, RuntimeError):
            arr = c.float().numpy()  # a dtype numpy lacks (float8, ...)
    return _c_order(arr), stats


def _prepare_mindspore(t):
    ms = sys.modules["mindspore"]
    dt = t.dtype
    if str(dt).lower().startswith("complex"):
        raise TypeError(f"complex tensors ({dt}) are not supported")
    shape = list(t.shape)
    if dt == ms.bfloat16:
        x32 = t.astype(ms.float32).asnumpy()
        arr = x32
        # MindSpore's CPU kernels cannot reduce bf16: reduce in float32, round to bf16.
        stats = _empty_stats() if x32.size == 0 else _numpy_stats(x32, "bfloat16")
    else:
        arr = t.asnumpy()
        if arr.size == 0:
            stats = _empty_stats()
        else:
            # msprobe reduces MindSpore tensors in their own dtype, so an
            # integer mean is truncated; we cast as msprobe does for torch.
            r = t if dt in (ms.float32, ms.float16) else t.astype(ms.float32)
            stats = {
                "max": float(r.max().asnumpy()),
                "min": float(r.min().asnumpy()),
                "mean": float(r.mean().asnumpy()),
                "norm": float(r.norm().asnumpy()),
            }
    stats["shape"] = shape
    return _c_order(np.asarray(arr)), stats


def prepare(value):
    """(C-ordered numpy array to save, statistics dict) of one tensor.

    Raises TypeError for anything that is not a supported tensor.
    """
    if isinstance(value, np.ndarray):
        return _prepare_numpy(value)
    if is_torch_tensor(value):
        return _prepare_torch(value)
    if is_mindspore_tensor(value):
        return _prepare_mindspore(value)
    raise TypeError(f"unsupported type {describe(value)}")
