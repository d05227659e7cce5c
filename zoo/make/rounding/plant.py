"""Plants item 3's errors into a copy of planted.py's dump: each call's recorded output replaced by
what a wrong kernel computes from the recorded inputs (the .pt file rewritten with torch.save,
its Max/Min/Mean/Norm in dump.json recomputed as msprobe computes them, `dump_data_dir` set to
the copy's folder; nothing else changes).

    python plant.py <correct dump folder> <planted dump folder>

The wrong kernels (WRONG below) are the ones tests/rounding.rs writes into the generated scripts'
`tested` function, so a script and the native replay judge the same values.
"""
import json
import os
import shutil
import sys

import torch
import torch.nn.functional as F


def f16_sequential_sum(x):
    """Float16 accumulation: every partial sum rounded to float16, in order."""
    acc = torch.zeros((), dtype=x.dtype)
    for value in x.reshape(-1):
        acc = acc + value
    return acc


def bf16_matmul(a, b):
    """A float32 matmul whose inputs were rounded to bfloat16 first."""
    return torch.matmul(a.to(torch.bfloat16).to(a.dtype), b.to(torch.bfloat16).to(b.dtype))


def four_ulp_mul(a, b):
    """The product moved 4 ULP up."""
    r = torch.mul(a, b)
    for _ in range(4):
        r = torch.nextafter(r, torch.full_like(r, float("inf")))
    return r


def sum_missing_last(x, dim):
    """A reduction that drops the last element of its dim."""
    return torch.sum(x.narrow(dim, 0, x.shape[dim] - 1), dim=dim)


def add_one_sign_flipped(a, b):
    """The sum with element 17 negated."""
    r = torch.add(a, b).clone()
    r[17] = -r[17]
    return r


# call -> the wrong kernel, called with the recorded positional inputs and keyword arguments
WRONG = {
    "Torch.sum.0.forward": lambda args, kwargs: f16_sequential_sum(args[0]),
    "Torch.matmul.0.forward": lambda args, kwargs: bf16_matmul(args[0], args[1]),
    "Torch.mul.0.forward": lambda args, kwargs: four_ulp_mul(args[0], args[1]),
    "Functional.gelu.0.forward": lambda args, kwargs: F.gelu(args[0], approximate="tanh"),
    "Torch.sum.1.forward": lambda args, kwargs: sum_missing_last(args[0], kwargs["dim"]),
    "Torch.add.0.forward": lambda args, kwargs: add_one_sign_flipped(args[0], args[1]),
}


def statistics(t):
    """msprobe's Max/Min/Mean/Norm of a floating tensor (computed in its own dtype, as it does)."""
    return {"Max": t.max().item(), "Min": t.min().item(), "Mean": t.mean().item(), "Norm": torch.norm(t).item()}


def main(src, dst):
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    with open(os.path.join(dst, "dump.json"), encoding="utf-8") as f:
        dump = json.load(f)
    data_dir = os.path.join(dst, "dump_tensor_data")

    def load(desc):
        return torch.load(os.path.join(data_dir, desc["data_name"]), weights_only=True)

    for name, wrong in WRONG.items():
        entry = dump["data"][name]
        args = [load(a) for a in entry["input_args"]]
        kwargs = {k: v["value"] for k, v in entry["input_kwargs"].items()}
        out = entry["output"][0]
        result = wrong(args, kwargs)
        assert result.dtype == load(out).dtype and list(result.shape) == out["shape"], name
        torch.save(result, os.path.join(data_dir, out["data_name"]))
        out.update(statistics(result))
    dump["dump_data_dir"] = os.path.abspath(data_dir)  # as msprobe writes it: this copy's own folder
    with open(os.path.join(dst, "dump.json"), "w", encoding="utf-8") as f:
        json.dump(dump, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} <correct dump folder> <planted dump folder>")
    main(sys.argv[1], sys.argv[2])
