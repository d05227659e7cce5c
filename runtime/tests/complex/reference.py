"""Runs the complex agreement cases in torch, in complex128 and float64, and
writes what runtime/tests/complex_agreement.rs needs to OUT_DIR: `cases.json`
and one .npy file per input, output, output gradient and input gradient.

Usage: reference.py OUT_DIR

A complex tensor is saved as its float pairs (`torch.view_as_real`: a trailing
dimension of 2), as the runtime computes it. Each case runs forward and, with
random output gradients (complex for a complex output), backward through
torch.autograd.grad on every tensor argument; a gradient of a complex input is
saved as its pairs too (PyTorch's convention: d/d re + i d/d im).

cases.json holds {"cases": [...]}, one object per case:
  name       the dump name (`Torch.mul`)
  call       a readable description
  args       [{"tensor": file, "complex": bool} | number], positional
  kwargs     [[key, value]], value as in args
  outputs    [{"file", "complex"}]
  grad_outputs  [file]
  grads      [file], one per tensor argument, in order (none when `backward` is false)
  backward   whether the gradients are compared (a zero divisor's are infinities torch
             and the runtime reach by other paths)
"""

import json
import sys
from pathlib import Path

import numpy as np
import torch

OUT = Path(sys.argv[1])
RNG = np.random.default_rng(2024)
SAVED = [0]


def save(t):
    SAVED[0] += 1
    name = f"t{SAVED[0]}.npy"
    t = t.detach().resolve_conj()
    np.save(OUT / name, (torch.view_as_real(t) if t.is_complex() else t).double().numpy())
    return name


def z(*shape):
    return torch.complex(torch.tensor(RNG.uniform(-2, 2, shape)), torch.tensor(RNG.uniform(-2, 2, shape)))


def r(*shape, low=-2.0, high=2.0):
    return torch.tensor(RNG.uniform(low, high, shape))


def encode(v):
    if isinstance(v, torch.Tensor):
        return {"tensor": save(v), "complex": v.is_complex()}
    return v


def case(name, fn, args, kwargs=None, backward=True):
    kwargs = kwargs or {}
    leaves = [a.clone().requires_grad_(True) if isinstance(a, torch.Tensor) else a for a in args]
    kw = {k: (v.clone().requires_grad_(True) if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}
    out = fn(*leaves, **kw)
    outs = list(out) if isinstance(out, tuple) else [out]
    grad_outputs = [z(*o.shape) if o.is_complex() else r(*o.shape) for o in outs]
    tensors = [a for a in leaves if isinstance(a, torch.Tensor)] + [v for v in kw.values() if isinstance(v, torch.Tensor)]
    grads = torch.autograd.grad(outs, tensors, grad_outputs, allow_unused=True) if backward else []
    grads = [g if g is not None else torch.zeros_like(t) for g, t in zip(grads, tensors)]
    CASES.append({
        "name": name,
        "call": f"{name}({', '.join(str(tuple(a.shape)) + (' complex' if a.is_complex() else '') if isinstance(a, torch.Tensor) else repr(a) for a in args)}{''.join(f', {k}={v!r}' for k, v in kwargs.items())})",
        "args": [encode(a) for a in args],
        "kwargs": [[k, encode(v)] for k, v in kwargs.items()],
        "outputs": [{"file": save(o), "complex": o.is_complex()} for o in outs],
        "grad_outputs": [save(g) for g in grad_outputs],
        "grads": [save(g) for g in grads],
        "backward": backward,
    })


CASES = []
T = torch.Tensor
BINARY = {
    "add": (torch.add, T.add, T.__add__, T.__radd__),
    "sub": (torch.sub, T.sub, T.__sub__),
    "mul": (torch.mul, T.mul, T.__mul__, T.__rmul__),
    "div": (torch.div, T.div, T.__truediv__, torch.true_divide),
}
for op, fns in BINARY.items():
    for fn in fns:
        prefix = "Torch" if any(fn is f for f in (torch.add, torch.sub, torch.mul, torch.div, torch.true_divide)) else "Tensor"
        name = f"{prefix}.{fn.__name__}"
        case(name, fn, [z(3, 4), z(4)])
        case(name, fn, [z(2, 3), r(2, 3)])
        case(name, fn, [z(3), 0.75])
    if op in ("add", "sub"):
        case(f"Torch.{op}", getattr(torch, op), [z(2, 3), z(2, 3)], {"alpha": -1.5})
case("Torch.div", torch.div, [r(2, 3), z(2, 3)])
case("Tensor.__rsub__", T.__rsub__, [z(2, 3), z(3)])
case("Tensor.__rsub__", T.__rsub__, [z(2, 3), 2.5])
case("Tensor.__rtruediv__", T.__rtruediv__, [z(2, 3), z(3)])
case("Tensor.__rtruediv__", T.__rtruediv__, [z(2, 3), 2.5])
for name, fn in [("Torch.neg", torch.neg), ("Tensor.neg", T.neg), ("Tensor.__neg__", T.__neg__),
                 ("Torch.conj", torch.conj), ("Tensor.conj", T.conj), ("Torch.conj_physical", torch.conj_physical),
                 ("Tensor.conj_physical", T.conj_physical), ("Torch.abs", torch.abs), ("Tensor.abs", T.abs),
                 ("Tensor.__abs__", T.__abs__), ("Torch.angle", torch.angle), ("Tensor.angle", T.angle)]:
    case(name, fn, [z(2, 5)])
case("Torch.angle", torch.angle, [r(7)])
case("Torch.polar", torch.polar, [r(2, 3, low=0.1, high=3.0), r(2, 3, low=-3.0, high=3.0)])
case("Torch.polar", torch.polar, [r(2, 3, low=0.1, high=3.0), r(3, low=-3.0, high=3.0)])
case("Torch.complex", torch.complex, [r(2, 3), r(3)])
case("Torch.view_as_real", torch.view_as_real, [z(2, 3)])
case("Torch.view_as_complex", torch.view_as_complex, [r(2, 3, 2)])
for name, fn in [("Torch.matmul", torch.matmul), ("Tensor.matmul", T.matmul), ("Tensor.__matmul__", T.__matmul__)]:
    case(name, fn, [z(2, 3, 4), z(4, 5)])
    case(name, fn, [z(3, 4), z(4)])
# Aliases, and in-place forms on a copy (torch differentiates them as their bases).
for name, fn in [("Torch.multiply", torch.multiply), ("Tensor.multiply", T.multiply), ("Torch.divide", torch.divide),
                 ("Tensor.divide", T.divide), ("Torch.subtract", torch.subtract), ("Tensor.subtract", T.subtract)]:
    case(name, fn, [z(3, 4), z(4)])
for name, fn in [("Torch.absolute", torch.absolute), ("Tensor.absolute", T.absolute)]:
    case(name, fn, [z(2, 5)])
for name in ["add_", "__iadd__", "sub_", "__isub__", "mul_", "__imul__", "div_", "__itruediv__"]:
    case(f"Tensor.{name}", lambda a, b, name=name: getattr(a.clone(), name)(b), [z(3, 4), z(4)])
    case(f"Tensor.{name}", lambda a, b, name=name: getattr(a.clone(), name)(b), [z(2, 3), 0.5])
case("Tensor.neg_", lambda a: a.clone().neg_(), [z(2, 3)])
for name, fn in [("Torch.sum", torch.sum), ("Tensor.sum", T.sum), ("Torch.mean", torch.mean), ("Tensor.mean", T.mean)]:
    case(name, fn, [z(3, 4)])
    case(name, fn, [z(3, 4), 1], {"keepdim": True})
    case(name, fn, [z(2, 3, 4)], {"dim": [0, -1]})
# Zeros: abs and angle at 0 (value and gradient 0), division by a zero (c10's infinities and NaN).
C128 = torch.complex128
case("Torch.abs", torch.abs, [torch.tensor([0j, 1e30 + 1e30j, 1e-30 - 1e-30j, 3 + 4j], dtype=C128)])
case("Torch.angle", torch.angle, [torch.tensor([0j, 1 + 1j, -2 + 0.5j, -1e-3j], dtype=C128)])
case("Torch.div", torch.div, [torch.tensor([1 + 1j, 1 + 0j, 0j, -1 + 2j, 2 - 1j], dtype=C128), torch.tensor([0j, 0j, 0j, 0j, 1 + 0.5j], dtype=C128)],
     backward=False)
(OUT / "cases.json").write_text(json.dumps({"cases": CASES}))
