"""Runs the scripts' fused-attention magnitudes on the shared cases.

Usage: check.py CASES_JSON PYTHON_DIR. Imports PARTS from the scripts'
machinery (msprobe_rs.repro.magnitude, under PYTHON_DIR: the repository's
python/ folder) and prints a JSON list of {forward: [per output], grads:
{parameter: values}}, one per case, in order.
"""
import json
import sys

import torch

TORCH_DTYPES = {"bool": torch.bool, "uint8": torch.uint8}


def magnitudes(cases, parts):
    """Each case's [forward per output] and {parameter: gradient} by the scripts' PARTS."""
    results = []
    for c in cases:
        bound = dict(c["settings"])
        for t in c["tensors"]:
            values = torch.tensor(t["values"], dtype=torch.float64).reshape(t["shape"])
            bound[t["name"]] = values.to(TORCH_DTYPES[t["dtype"]]) if t["dtype"] in TORCH_DTYPES else values
        dy = c["dy"]
        dy = None if dy is None else torch.tensor(dy["values"], dtype=torch.float64).reshape(dy["shape"])
        name = c["api"].split(".")[-1]
        forward, grads = parts[name](bound, dy, {"query": c["dtype"]})
        results.append({"forward": [f.tolist() for f in forward], "grads": {n: g.tolist() for n, g in grads}})
    return results


if __name__ == "__main__":
    sys.path.insert(0, sys.argv[2])
    from msprobe_rs.repro.magnitude import PARTS

    with open(sys.argv[1], encoding="utf-8") as f:
        print(json.dumps(magnitudes(json.load(f), PARTS)))
