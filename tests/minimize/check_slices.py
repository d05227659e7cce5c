"""The slicing rules of `replay --minimize` checked against torch (tests/minimize.rs): for every
call a minimize table lists as minimized, the op (torch's, by the dump's name: `Functional.x` is
torch.nn.functional.x, `Torch.x` torch.x, `Tensor.x` the method, `NPU.x` the torch composition of
torch_npu's documented kernel in runtime/tests/npu/compositions.py) is run in float64 on the whole
inputs and on their windows the table gives, on the recorded inputs and on random ones of the
same shapes (the cut call's other arguments are the minimized dump's: a head count cut with the
heads); the windowed call's output 0 must equal the window of the whole call's output 0 (the
window the table gives for output[0]) to 1e-12 relative. It also checks that each tensor
file of the minimized dump holds exactly the window of the original's values.

    python check_slices.py DUMP_DIR OUTPUT_DIR       (OUTPUT_DIR: replay --minimize's -o)

Prints one line per call and exits 1 on any disagreement.
"""
import csv
import glob
import json
import os
import re
import sys

import numpy as np
import torch
import torch.nn.functional as F


def load(path):
    """A tensor file's values, floats in float64, integers and bools as they are."""
    if path.endswith(".npy"):
        t = torch.from_numpy(np.load(path))
    else:
        t = torch.load(path, map_location="cpu", weights_only=True)
    return t.to(torch.float64) if t.is_floating_point() else t


def windows(text):
    """{'query': [(0, 1), None, ...], 'output[0]': [...]} from `name[0:1, :] ...`."""
    out = {}
    for name, dims in re.findall(r"([A-Za-z_][\w.]*(?:\[\d+\])?)\[([^\[\]]*)\]", text):
        out[name] = [None if d.strip() == ":" else tuple(int(x) for x in d.split(":")) for d in dims.split(",")] if dims.strip() else []
    return out


def cut(t, win):
    index = tuple(slice(None) if w is None else slice(w[0], w[1]) for w in win)
    return t[index] if index else t


def value(v, data_dir, tensors):
    if isinstance(v, list):
        return [value(x, data_dir, tensors) for x in v]
    if not isinstance(v, dict):
        return v
    if v.get("data_name"):
        t = load(os.path.join(data_dir, v["data_name"]))
        tensors.append(t)
        return t
    if v.get("type") in ("torch.Size",):
        return list(v["value"])
    return v.get("value")


def callable_of(name):
    prefix, op = name.split(".")[:2]
    if prefix == "NPU":
        # torch_npu's fused kernels as the float64 torch compositions of their documented
        # semantics (the runtime's NPU agreement cases, runtime/tests/npu/compositions.py).
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runtime", "tests", "npu"))
        import compositions

        # `NPU.fast_gelu` is torch_npu's alias of npu_fast_gelu.
        return getattr(compositions, op, None) or getattr(compositions, f"npu_{op}")
    if prefix == "Functional":
        return getattr(F, op)
    if prefix == "Torch":
        return getattr(torch, op)
    return lambda self, *a, **k: getattr(self, op)(*a, **k)


def run(fn, args, kwargs):
    with torch.no_grad():
        out = fn(*args, **kwargs)
    return out[0] if isinstance(out, (tuple, list)) else out


def check(dump_dir, row, out_dir):
    name = row["API Name"]
    entry = json.load(open(os.path.join(dump_dir, "dump.json"), encoding="utf-8"))["data"][f"{name}.forward"]
    data_dir = os.path.join(dump_dir, "dump_tensor_data")
    wins = windows(row["Slices"])
    tensors = []
    args = [value(a, data_dir, tensors) for a in entry.get("input_args", [])]
    kwargs = {k: value(v, data_dir, tensors) for k, v in entry.get("input_kwargs", {}).items()}
    names = [n for n in wins if not n.startswith("output[")]
    # The table names the top-level tensor inputs: the positional ones in order, then the keywords.
    positional = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    slots = [("a", i) for i in positional] + [("k", n) for n in names[len(positional):]]
    if len(slots) != len(names) or any(k == "k" and not isinstance(kwargs.get(n), torch.Tensor) for k, n in slots):
        return f"{name}: the table's inputs {names} are not the call's tensors"
    fn = callable_of(name)
    problems = []
    minimized = json.load(open(os.path.join(out_dir, "minimized", name, "dump.json"), encoding="utf-8"))["data"][f"{name}.forward"]
    small_dir = os.path.join(out_dir, "minimized", name, "dump_tensor_data")
    min_args = [value(a, small_dir, []) for a in minimized.get("input_args", [])]
    min_kwargs = {k: value(v, small_dir, []) for k, v in minimized.get("input_kwargs", {}).items()}
    for (kind, key), label in zip(slots, names):
        whole, small = (args[key], min_args[key]) if kind == "a" else (kwargs[key], min_kwargs[key])
        if not torch.equal(cut(whole, wins[label]), small):
            problems.append(f"{label}: the written file is not the window of the dump's values")
    for source in ("recorded", "random"):
        gen = torch.Generator().manual_seed(0)
        full_args, full_kwargs = list(args), dict(kwargs)
        if source == "random":
            fresh = lambda t: torch.randn(t.shape, generator=gen, dtype=torch.float64) if t.is_floating_point() else t  # noqa: E731
            full_args = [fresh(a) if isinstance(a, torch.Tensor) else a for a in full_args]
            full_kwargs = {k: fresh(v) if isinstance(v, torch.Tensor) else v for k, v in full_kwargs.items()}
        # The cut call's other arguments are the minimized dump's (a head count cut with its heads).
        small_args, small_kwargs = list(min_args), dict(min_kwargs)
        for (kind, key), label in zip(slots, names):
            if kind == "a":
                small_args[key] = cut(full_args[key], wins[label])
            else:
                small_kwargs[key] = cut(full_kwargs[key], wins[label])
        whole = cut(run(fn, full_args, full_kwargs), wins["output[0]"])
        part = run(fn, small_args, small_kwargs)
        if whole.shape != part.shape or (whole.numel() and float((whole - part).abs().max()) > 1e-12 * max(float(whole.abs().max()), 1e-300)):
            problems.append(f"{source} inputs: the windowed call's output differs from the window of the whole call's")
    return f"{name}: " + "; ".join(problems) if problems else None


def main():
    dump_dir, out_dir = sys.argv[1], sys.argv[2]
    [table] = glob.glob(os.path.join(out_dir, "minimize_*.csv"))
    with open(table, encoding="utf-8-sig", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["Status"] == "minimized"]
    bad = 0
    for row in rows:
        problem = check(dump_dir, row, out_dir)
        print(problem or f"{row['API Name']}: agrees", flush=True)
        bad += problem is not None
    print(f"{len(rows)} calls, {bad} disagree")
    sys.exit(1 if bad or not rows else 0)


if __name__ == "__main__":
    main()
