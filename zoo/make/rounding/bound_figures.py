"""The figures of the `bound` standard (issue 21) for one recorded output, computed independently
of msprobe-rs with numpy in float64: per element the bench b, the tested t (the dump's recorded
value), the magnitude m of the op's rounding class and bound = k*(u*m + eta) + ulp_d(m)/2 (BOUND.md, with
k and u as runtime/src/ops/mod.rs `Rounding::factors` gives them), and the row's Message and metrics
as `--standard bound` writes them. zoo/README.md quotes its
output; tests/rounding.rs pins the same Messages.

    python bound_figures.py <dump folder> <entry> [<entry> ...]     e.g. Tensor.add.0.forward

An entry is `<api>.forward` (its output 0) or `<api>.backward` (its input gradient 0). Known ops:
add (alpha), mul (Terms), linear, matmul, sum with dim (Sums), gelu forward and backward (Parts).
"""
import json
import math
import os
import sys

import numpy as np
import torch

U = 2.0 ** -24  # float32 accumulation for float32, float16 and bfloat16 outputs
# Elementwise results (every class but Sums, and Terms' gradients) of float16 and bfloat16 are
# computed in their own precision: k = 4 and their own unit roundoff.
OWN_U = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}
# The underflow unit eta of each compute precision (half its smallest subnormal), by u.
ETA = {2.0 ** -53: 2.0 ** -1075, 2.0 ** -24: 2.0 ** -150, 2.0 ** -11: 2.0 ** -25, 2.0 ** -8: 2.0 ** -134}
FORMATS = {  # mantissa bits, minimum exponent
    "float16": (10, -14), "bfloat16": (7, -126), "float32": (23, -126), "float64": (52, -1022),
}
H = 2.0 ** -20


def dtype_name(spelling):
    s = spelling.replace("torch.", "").lower()
    return {"float": "float32", "half": "float16"}.get(s, s)


def ulp(m, dtype):
    mant, emin = FORMATS[dtype]
    e = np.where(m > 0, np.floor(np.log2(np.where(m > 0, m, 1.0))), emin)
    return np.exp2(np.maximum(e, emin) - mant)


def load(folder, desc):
    path = os.path.join(folder, "dump_tensor_data", desc["data_name"])
    if path.endswith(".npy"):
        return np.load(path).astype(np.float64)
    return torch.load(path, weights_only=True).to(torch.float64).numpy()


def erf(x):
    return np.vectorize(math.erf)(x)


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def gelu_grad(x):
    return 0.5 * (1.0 + erf(x / math.sqrt(2.0))) + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def smooth(f, x, y):
    """Smooth's magnitude: |y| + |f(x(1+h)) - f(x(1-h))| / (2h) (one float input)."""
    return np.abs(y) + np.abs(f(x * (1 + H)) - f(x * (1 - H))) / (2 * H)


def factors(rounding, dtype, backward):
    """(k, u) of a result of `dtype` (runtime/src/ops/mod.rs, Rounding::factors)."""
    k = {"terms": 16 if backward else 3, "sums": 16, "smooth": 32, "parts": 32}[rounding]
    accumulates = rounding == "sums" or (backward and rounding == "terms")
    if dtype == "float64":
        return k, 2.0 ** -53
    if dtype in OWN_U and not accumulates:
        return 4, OWN_U[dtype]
    return k, U


def figures(op, direction, args, kwargs, dy):
    """(bench, magnitude, rounding class) of the op's output 0 (forward) or input gradient 0 (backward)."""
    if op in ("add", "__add__", "add_", "__iadd__"):
        a, b = args[0], args[1]
        alpha = kwargs.get("alpha", 1.0)
        return a + alpha * b, np.abs(a) + np.abs(alpha * b), "terms"
    if op in ("mul", "__mul__"):
        return args[0] * args[1], np.abs(args[0] * args[1]), "terms"
    if op == "linear":
        x, w = args[0], args[1]
        bias = args[2] if len(args) > 2 else kwargs.get("bias", 0.0)
        return x @ w.T + bias, np.abs(x) @ np.abs(w).T + np.abs(bias), "sums"
    if op == "matmul":
        return args[0] @ args[1], np.abs(args[0]) @ np.abs(args[1]), "sums"
    if op == "sum":
        dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
        return np.sum(args[0], axis=dim), np.sum(np.abs(args[0]), axis=dim), "sums"
    x = args[0] if args else None
    if op == "gelu" and direction == "forward":  # Smooth plus gelu's parts |x|(1 + |erf|)/2
        y = gelu(x)
        return y, smooth(gelu, x, y) + np.abs(x) * 0.5 * (1 + np.abs(erf(x / math.sqrt(2.0)))), "parts"
    if op == "gelu" and direction == "backward":  # ... and |dy|((1 + |erf|)/2 + |x| phi(x))
        g = dy * gelu_grad(x)
        parts = np.abs(dy) * (0.5 * (1 + np.abs(erf(x / math.sqrt(2.0)))) + np.abs(x) * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi))
        return g, smooth(lambda x: dy * gelu_grad(x), x, g) + parts, "parts"
    raise SystemExit(f"no rounding class here for {op} ({direction})")


def g6(v):
    return "%.6g" % v


def entry_figures(folder, entry):
    with open(os.path.join(folder, "dump.json"), encoding="utf-8") as f:
        data = json.load(f)["data"]
    api, direction = entry.rsplit(".", 1)
    forward = data[api + ".forward"]
    args = [load(folder, a) if "data_name" in a else a.get("value") for a in forward["input_args"]]
    kwargs = {k: (load(folder, v) if isinstance(v, dict) and "data_name" in v else v.get("value"))
              for k, v in forward.get("input_kwargs", {}).items()}
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    if direction == "forward":
        tested_desc, dy = forward["output"][0], None
    else:
        backward = data[api + ".backward"]
        grads = backward.get("input") or backward.get("input_args")
        tested_desc, dy = backward["output"][0], load(folder, grads[0])
    op = api.split(".")[1]
    bench, mag, rounding = figures(op, direction, args, kwargs, dy)
    tested = load(folder, tested_desc)
    dtype = dtype_name(tested_desc["dtype"])
    k, u = factors(rounding, dtype, direction == "backward")
    bench, mag = np.broadcast_to(bench, tested.shape).reshape(-1), np.broadcast_to(mag, tested.shape).reshape(-1)
    t = tested.reshape(-1)
    bound = k * (u * mag + ETA[u]) + ulp(mag, dtype) / 2
    ratio = np.abs(t - bench) / bound
    beyond = int(np.sum(ratio > 1))
    i = int(np.argmax(ratio))
    metrics = f"bound_ratio={g6(ratio[i])}; beyond_bound={g6(beyond / t.size)}; k={g6(k)}; u={g6(u)}"
    message = (f"rounding bound: {beyond} of {t.size} elements beyond k*(u*magnitude + eta) + ulp/2 (k={g6(k)}, u={g6(u)}); "
               f"worst {g6(ratio[i])} times the bound at element {i}: tested {g6(t[i])}, bench {g6(bench[i])}, "
               f"magnitude {g6(mag[i])}") if beyond else None
    return {"entry": entry, "dtype": dtype, "k": k, "elements": t.size, "beyond": beyond, "worst_ratio": float(ratio[i]),
            "worst_element": i, "metrics": metrics, "message": message,
            "ratios": ratio, "tested": t, "bench": bench}


def main(folder, entries):
    for entry in entries:
        fig = entry_figures(folder, entry)
        print(json.dumps({k: v for k, v in fig.items() if not isinstance(v, np.ndarray)}))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
