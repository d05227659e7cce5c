"""Runs the agreement cases (cases.py) in torch and writes what the Rust test
(runtime/tests/agreement.rs) needs to OUT_DIR: `cases.json` and one .npy file
per input, output, grad_output and input gradient.

Usage: reference.py OUT_DIR

With OUT_DIR/derived.json (the runtime's derived names, written by the
Rust test), the base cases of each derived name run under that name too
(`cases.derived_cases`); a derived case torch refuses (an in-place form
whose result type `self` cannot hold) is left out, and the Rust test fails
for a derived name left without a case.

Float tensors are float64 and the values are computed with float64 as the
default dtype, so that int -> float promotions are exact too, and with every
floating dtype argument raised to float64 (`Case.bench`: the bench never
rounds to a cast's dtype); the dtype each output would have under torch's
real default (float32), with the call as written, is recorded apart, for the
runtime's promotion rules. Inputs come from numpy generators seeded per
case, so the same case always gets the same numbers.

cases.json holds {"cases": [...], "refused": [...]}: `refused` the derived cases
MindSpore refused to run for other reasons than a kernel's dtype limit
({name, error}: a MindSpore spelling that does not take a call its torch base
takes), `cases` one object per case run:
  name, dump_name, framework  the op-table name and what a dump calls it
  call                        a readable description of the call
  args, kwargs                arguments (kwargs as [key, value] pairs, in order)
  backward                    whether the backward is compared
  differentiate               per top-level argument (args, then kwargs): is it
                              a differentiated float tensor
  outputs                     [{"file", "dtype"}], the flattened results
  grad_outputs                per output: a file, or null for non-float outputs
  grads                       per differentiated tensor (those of a list
                              argument too), in input order: a file
  values_undefined            true when only the outputs' shapes and dtypes
                              are checked (torch.empty: uninitialized memory)
  reference                   "torch", or "mindspore" where MindSpore itself
                              computed the results (ms_bridge.py)
Argument values are JSON scalars, lists, null, or one-key objects:
{"tensor": file, "dtype": name}, {"dtype": name}, {"float": "inf"},
{"slice": [start, stop, step]}, {"ellipsis": true}.
"""

import contextlib
import json
import math
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

from cases import CASES, Given, Rand, derived_cases

SEED = 1234

# MindSpore's CPU kernels refusing a dtype (float64, an integer input): a limit
# of MindSpore on this machine, not a spelling that takes other arguments.
KERNEL_LIMIT = re.compile(
    r"Unsupported data type|supports types|must be a type of|does not support this kernel data type|must not be float64|unregistered"
)


def numpy_array(t):
    """A tensor as float64, int64 or bool numpy data (exact for every dtype)."""
    t = t.detach()
    if t.is_floating_point():
        t = t.to(torch.float64)
    elif t.dtype != torch.bool:
        t = t.to(torch.int64)
    return t.contiguous().numpy()


def dtype_name(d):
    """torch.float32 -> "float32" (the runtime's TDType::name)."""
    return str(d).removeprefix("torch.")


@contextlib.contextmanager
def default_dtype(d):
    """Runs a block with another default float dtype."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(d)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


class CaseWriter:
    """Writes one case's tensors as <index>_<what>.npy in the output folder."""

    def __init__(self, out_dir, index):
        self.out_dir = out_dir
        self.index = index

    def save(self, what, t):
        file = f"{self.index:03}_{what}.npy"
        np.save(self.out_dir / file, numpy_array(t))
        return file


def make_tensor(spec, rng):
    """The tensor a spec describes."""
    dtype = getattr(torch, spec.dtype)
    if isinstance(spec, Given):
        return torch.tensor(spec.values, dtype=dtype)
    if spec.dtype == "bool":
        data = rng.random(spec.shape) < 0.5
    elif dtype.is_floating_point:
        data = rng.uniform(spec.low, spec.high, spec.shape)
    else:
        data = rng.integers(spec.low, spec.high, spec.shape)
    return torch.from_numpy(np.asarray(data)).to(dtype)


def realize(value, rng, writer, path):
    """Turns a case argument into (torch value, JSON value, description),
    saving its tensors; `path` names the argument in file names."""
    if isinstance(value, (Rand, Given)):
        t = make_tensor(value, rng)
        file = writer.save(path, t)
        return t, {"tensor": file, "dtype": value.dtype}, f"{value.dtype}{list(t.shape)}"
    if isinstance(value, (list, tuple)):
        parts = [realize(v, rng, writer, f"{path}.{i}") for i, v in enumerate(value)]
        torch_value = type(value)(p[0] for p in parts)
        text = ", ".join(p[2] for p in parts)
        return torch_value, [p[1] for p in parts], f"({text})" if isinstance(value, tuple) else f"[{text}]"
    if isinstance(value, torch.dtype):
        return value, {"dtype": dtype_name(value)}, str(value)
    if isinstance(value, slice):
        return value, {"slice": [value.start, value.stop, value.step]}, repr(value)
    if value is Ellipsis:
        return value, {"ellipsis": True}, "..."
    if isinstance(value, float) and not math.isfinite(value):
        return value, {"float": repr(value)}, repr(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value, value, repr(value)
    raise TypeError(f"unsupported case argument {value!r}")


def flatten(result):
    """The results of a call as a flat list (tuples and lists are spread, a
    Python bool becomes a 0-d tensor, a None stays: an output the call did
    not compute, as multi_head_attention_forward's weights without need_weights;
    a Python int, numel's, a 0-d int64 tensor)."""
    if result is None:
        return [None]
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in flatten(r)]
    if isinstance(result, bool):  # a protocol method's Python bool (__bool__): a 0-d bool tensor
        return [torch.tensor(result)]
    if isinstance(result, int):
        return [torch.tensor(result, dtype=torch.int64)]
    assert isinstance(result, torch.Tensor), f"non-tensor result {result!r}"
    return [result]


def realize_call(case, rng, writer):
    """A case's arguments realized: (args, JSON args, kwargs, JSON kwargs
    as [key, value] pairs, the arguments' descriptions)."""
    args, json_args, texts = [], [], []
    for i, a in enumerate(case.args):
        t, j, text = realize(a, rng, writer, f"arg{i}")
        args.append(t)
        json_args.append(j)
        texts.append(text)
    kwargs, json_kwargs = {}, []
    for k, a in case.kwargs.items():
        t, j, text = realize(a, rng, writer, f"kw_{k}")
        kwargs[k] = t
        json_kwargs.append([k, j])
        texts.append(f"{k}={text}")
    return args, json_args, kwargs, json_kwargs, texts


def run_case(index, case, out_dir):
    """Runs one case forward (and backward) in torch; returns its index entry."""
    rng = np.random.default_rng([SEED, index])
    writer = CaseWriter(out_dir, index)
    args, json_args, kwargs, json_kwargs, texts = realize_call(case, rng, writer)

    with default_dtype(torch.float32):
        dtypes = [None if o is None else dtype_name(o.dtype) for o in flatten(case.reference(*args, **kwargs))]

    # The float tensors at top level get gradients, unless marked constant,
    # and so do those inside a list argument (the runtime differentiates
    # every float tensor of a list, as it has no flag of its own).
    def leaf(key, v):
        if isinstance(v, (list, tuple)):
            return type(v)(leaf(key, x) for x in v)
        wanted = case.backward and isinstance(v, torch.Tensor) and v.is_floating_point() and key not in case.constants
        return v.detach().requires_grad_(True) if wanted else v

    def tensors_of(v):
        if isinstance(v, (list, tuple)):
            return [t for x in v for t in tensors_of(x)]
        return [v] if isinstance(v, torch.Tensor) else []

    args = [leaf(i, v) for i, v in enumerate(args)]
    kwargs = {k: leaf(k, v) for k, v in kwargs.items()}
    slots = args + list(kwargs.values())
    differentiate = [isinstance(v, torch.Tensor) and v.requires_grad for v in slots]
    # The differentiated tensors in input order, a list's in its order.
    leaves = [t for v in slots for t in tensors_of(v) if t.requires_grad]

    with default_dtype(torch.float64):
        outputs = flatten(case.bench(*args, **kwargs))
    assert len(outputs) == len(dtypes)
    entry = {
        "name": case.name,
        "dump_name": case.dump_name,
        "framework": case.framework,
        "call": f"{case.name}({', '.join(texts)})",
        "args": json_args,
        "kwargs": json_kwargs,
        "differentiate": differentiate,
        "outputs": [{"file": None if o is None else writer.save(f"out{i}", o), "dtype": d} for i, (o, d) in enumerate(zip(outputs, dtypes))],
        "backward": bool(leaves) and any(o is not None and o.requires_grad for o in outputs),
        "grad_outputs": None,
        "grads": None,
        "values_undefined": getattr(case, "values_undefined", False),
        "derived": hasattr(case, "derived_framework"),
        "reference": getattr(case, "reference_framework", "torch"),
    }
    if not entry["backward"]:
        return entry

    grad_outputs = [torch.from_numpy(rng.standard_normal(o.shape)).to(o.dtype) if o is not None and o.is_floating_point() else None for o in outputs]
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    grads = torch.autograd.grad([o for o, _ in pairs], leaves, [g for _, g in pairs], allow_unused=True)
    entry["grad_outputs"] = [None if g is None else writer.save(f"gout{i}", g) for i, g in enumerate(grad_outputs)]
    entry["grads"] = [writer.save(f"grad{i}", torch.zeros_like(x) if g is None else g) for i, (x, g) in enumerate(zip(leaves, grads))]
    return entry


def run_derived_case(index, case, out_dir):
    """`run_case`, where MindSpore is the reference, tried up to three times
    while MindSpore's CPU kernel selection refuses it: that selection has
    been seen to refuse a call it takes on the next run (mindspore.ops.exp2
    of float64: "Select CPU operator[Exp] fail"), and a case dropped for a
    kernel limit leaves its name without a case. A real limit refuses every try."""
    tries = 3 if getattr(case, "reference_framework", "torch") == "mindspore" else 1
    for attempt in range(tries):
        try:
            return run_case(index, case, out_dir)
        except Exception as e:
            if attempt + 1 == tries or not KERNEL_LIMIT.search(str(e)):
                raise


def main():
    out_dir = Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    # The implicit-dim softmax cases warn by design.
    warnings.simplefilter("ignore")
    entries = []
    for index, case in enumerate(CASES):
        try:
            entries.append(run_case(index, case, out_dir))
        except Exception as e:
            raise SystemExit(f"case {index} ({case.name}): torch failed: {e!r}")
    derived = out_dir / "derived.json"
    extra, refused = derived_cases(json.loads(derived.read_text())) if derived.exists() else ([], [])
    for index, case in enumerate(extra, start=len(CASES)):
        try:
            try:
                entries.append(run_derived_case(index, case, out_dir))
            except RuntimeError:
                # torch refuses the backward of some in-place forms (acosh_ needs the
                # self it overwrote): no dump holds one; the forward is still compared.
                if not case.backward:
                    raise
                case.backward = False
                entries.append(run_derived_case(index, case, out_dir))
        except Exception as e:
            if getattr(case, "reference_framework", "torch") == "mindspore" and not KERNEL_LIMIT.search(str(e)):
                refused.append({"name": case.name, "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"})
    (out_dir / "cases.json").write_text(json.dumps({"cases": entries, "refused": refused}, indent=1))
    print(f"{len(entries)} cases written to {out_dir}")


if __name__ == "__main__":
    main()
