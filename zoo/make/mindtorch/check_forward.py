"""Replays the forward calls of MSAdapter tensor dumps with the real torch and compares the outputs.

Why: the fixtures are meant to replay with no `error` row (they were made on the CPU). This checks,
when they are made, that each recorded forward output is what the real torch computes from the
recorded inputs (in float64): the API names mean PyTorch's APIs (`Torch.X` is torch.X,
`Functional.X` torch.nn.functional.X, `Tensor.X` torch.Tensor.X) and MSAdapter's CPU results agree.

    python check_forward.py TENSOR_DUMP_FOLDER ...      (each holding dump.json, dump_tensor_data/)

Run with the MSAdapter test environment's python (its `torch` is the real torch). Prints one
line per folder; exits 1 when an output differs by more than 1e-5 relative.
"""
import json
import os
import sys

import numpy as np
import torch


def _value(arg, folder):
    if isinstance(arg, list):
        return [_value(a, folder) for a in arg]
    if arg.get("type") == "mindspore.Tensor":
        array = np.load(os.path.join(folder, "dump_tensor_data", arg["data_name"]), allow_pickle=False)
        tensor = torch.from_numpy(array)
        return tensor.double() if tensor.is_floating_point() else tensor
    return arg["value"]


def _callable(name):
    prefix, op = name.split(".")[0], name.split(".")[1]
    home = {"Torch": torch, "Functional": torch.nn.functional, "Tensor": torch.Tensor}[prefix]
    return getattr(home, op)


def check(folder):
    entries = json.load(open(os.path.join(folder, "dump.json"), encoding="utf-8"))["data"]
    worst, checked = (0.0, ""), 0
    for name, entry in entries.items():
        if not name.endswith(".forward"):
            continue
        args = [_value(a, folder) for a in entry["input_args"]]
        kwargs = {k: _value(v, folder) for k, v in entry["input_kwargs"].items()}
        out = _callable(name)(*args, **kwargs)
        outs = out if isinstance(out, (tuple, list)) else [out]
        for got, want in zip(outs, entry["output"]):
            expected = _value(want, folder).double().numpy()
            diff = np.abs(got.double().numpy() - expected).max() / max(np.abs(expected).max(), 1e-12)
            worst = max(worst, (float(diff), name))
        checked += 1
    return checked, worst


def main():
    failed = False
    for folder in sys.argv[1:]:
        checked, (diff, name) = check(folder)
        failed |= diff > 1e-5
        print(f"{folder}: {checked} forward calls, largest relative difference {diff:.2e} ({name})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
