"""Runs the emulation cases in torch on CPU, in the device's own dtypes, and
writes what the Rust test (runtime/tests/emulation.rs) needs to OUT_DIR:
`cases.json` and one .npy file per input and output.

Usage: reference.py OUT_DIR

Every float case runs once per dtype in DTYPES: its inputs are drawn in
float64 (numpy, seeded per case and dtype), cast to the dtype, and torch
computes the op in that dtype, as a device would. Integer cases run once.
The .npy files hold the values as float64 (exact for every dtype: the cast
inputs and torch's results), int64 or bool.

cases.json holds {"cases": [...]}, one object per run:
  class                 the bound the Rust test applies (see CLASSES)
  name, dump_name       the op-table name and what a dump calls it
  framework             pytorch or mindspore
  dtype                 the float dtype of the run ("int64" for integer cases)
  call                  a readable description of the call
  args, kwargs          arguments, encoded as in the agreement test
                        (runtime/tests/agreement/reference.py)
  outputs               [{"file", "dtype"}], the flattened results
"""

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "agreement"))
from cases import default_reference  # noqa: E402  (the agreement test's name -> torch map)

SEED = 4321
DTYPES = ["float32", "float16", "bfloat16"]
# The bound classes, as runtime/tests/emulation.rs names them.
CLASSES = ["elementwise", "reduction", "matmul", "movement", "integer"]


@dataclass(frozen=True)
class X:
    """A float input in the run's dtype: uniform in [low, high) in float64,
    then cast to the dtype."""

    shape: tuple
    low: float = -2.0
    high: float = 2.0


@dataclass(frozen=True)
class Ints:
    """An integer input: uniform in [low, high), or the given values."""

    shape: tuple
    low: int = 0
    high: int = 5
    dtype: str = "int64"
    values: tuple = None


@dataclass(frozen=True)
class Bools:
    """A random bool input."""

    shape: tuple


CASES = []


def case(cls, name, *args, **kwargs):
    """Adds the call `name(*args, **kwargs)` to bound class `cls`."""
    assert cls in CLASSES
    CASES.append((cls, name, args, kwargs))


# --- elementwise: one rounding of a (nearly) exact result
case("elementwise", "Torch.add", X((4, 64)), X((64,)))
case("elementwise", "Torch.add", X((4, 64)), X((4, 64)), alpha=0.5)
case("elementwise", "Torch.add", X((4, 64)), 0.1)
case("elementwise", "Torch.add", Ints((4, 64), -3000, 3000), X((64,)))  # int64 + float: the int is cast first
case("elementwise", "Torch.sub", X((4, 64)), X((4, 1)))
case("elementwise", "Torch.mul", X((4, 64)), X((64,)))
case("elementwise", "Torch.mul", X((4, 64)), 0.1)
case("elementwise", "Torch.div", X((4, 64)), X((64,), 0.25, 2.0))
case("elementwise", "Torch.div", X((4, 64), -8, 8), X((64,), 0.25, 2.0), rounding_mode="floor")
case("elementwise", "Tensor.__rtruediv__", X((4, 64), 0.25, 2.0), 3.0)
case("elementwise", "Torch.neg", X((4, 64)))
case("elementwise", "Torch.square", X((4, 64)))
case("elementwise", "Torch.abs", X((4, 64)))
case("elementwise", "Torch.exp", X((4, 64), -6, 6))
case("elementwise", "Torch.log", X((4, 64), 0.01, 10))
case("elementwise", "Torch.sqrt", X((4, 64), 0.01, 10))
case("elementwise", "Torch.rsqrt", X((4, 64), 0.01, 10))
case("elementwise", "Torch.reciprocal", X((4, 64), 0.1, 10))
case("elementwise", "Torch.sin", X((4, 64), -4, 4))
case("elementwise", "Torch.cos", X((4, 64), -4, 4))
case("elementwise", "Torch.erf", X((4, 64), -3, 3))
case("elementwise", "Torch.pow", X((4, 64), 0.1, 3), 2.5)
case("elementwise", "Torch.pow", X((4, 64)), 3)
case("elementwise", "Torch.pow", X((4, 64), 0.1, 3), X((4, 64), -2, 2))
case("elementwise", "Torch.sigmoid", X((4, 64), -8, 8))
case("elementwise", "Torch.tanh", X((4, 64), -4, 4))
case("elementwise", "Functional.silu", X((4, 64), -8, 8))
case("elementwise", "Functional.gelu", X((4, 64), -5, 5))
case("elementwise", "Functional.gelu", X((4, 64), -5, 5), approximate="tanh")
case("elementwise", "Functional.relu", X((4, 64)))
case("elementwise", "Functional.leaky_relu", X((4, 64)), 0.2)
case("elementwise", "Torch.clamp", X((4, 64)), -0.5, 0.7)
case("elementwise", "Torch.where", Bools((4, 64)), X((4, 64)), X((64,)))
case("elementwise", "Torch.lerp", X((4, 64)), X((4, 64)), 0.3)
case("elementwise", "Torch.addcmul", X((4, 64)), X((4, 64)), X((64,)), value=0.5)
case("elementwise", "Torch.addcdiv", X((4, 64)), X((4, 64)), X((64,), 0.5, 2.0), value=-2)

case("elementwise", "Functional.hardswish", X((4, 64), -5, 5))
case("elementwise", "Functional.hardsigmoid", X((4, 64), -5, 5))
case("elementwise", "Functional.relu6", X((4, 64), -8, 8))
case("elementwise", "Torch.minimum", X((4, 64)), X((64,)))
case("elementwise", "Torch.outer", X((32,)), X((16,)))
case("elementwise", "Functional.interpolate", X((2, 3, 4, 4)), scale_factor=2, mode="nearest")

# --- reductions: one rounding of a sum accumulated in float32
case("reduction", "Torch.sum", X((8, 256)), -1)
case("reduction", "Torch.sum", X((16, 64)))
case("reduction", "Torch.mean", X((8, 256)), -1)
case("reduction", "Torch.cumsum", X((4, 64)), 1)
case("reduction", "Torch.var", X((8, 128)), 1)
case("reduction", "Torch.std", X((8, 128)), 1)
case("reduction", "Torch.vector_norm", X((8, 128)), 2, -1)
case("reduction", "Functional.softmax", X((8, 128), -6, 6), dim=-1)
case("reduction", "Functional.log_softmax", X((8, 128), -6, 6), dim=-1)
case("reduction", "Functional.softmax", X((8, 128), -6, 6), dim=-1, dtype=torch.float32)
case("reduction", "Functional.layer_norm", X((4, 8, 128)), (128,), X((128,)), X((128,)))
case("reduction", "Functional.rms_norm", X((4, 128)), [128], X((128,)))
case("reduction", "Functional.cross_entropy", X((8, 32), -4, 4), Ints((8,), 0, 32))
case("reduction", "Functional.avg_pool2d", X((2, 4, 8, 8)), 2)

case("reduction", "Functional.batch_norm", X((4, 8, 6, 6)), X((8,)), X((8,), 0.5, 2), X((8,)), X((8,)), True)
case("reduction", "Functional.group_norm", X((2, 8, 6, 6)), 4, X((8,)), X((8,)))
case("reduction", "Functional.adaptive_avg_pool2d", X((2, 4, 8, 8)), (3, 3))
case("reduction", "Functional.interpolate", X((2, 3, 5, 5)), size=(8, 8), mode="bilinear", align_corners=False)
case("reduction", "Torch.logsumexp", X((8, 128), -6, 6), -1)
case("reduction", "Functional.mse_loss", X((8, 64)), X((8, 64)))
case("reduction", "Functional.l1_loss", X((8, 64)), X((8, 64)))
case("reduction", "Functional.smooth_l1_loss", X((8, 64)), X((8, 64)))
case("reduction", "Functional.nll_loss", X((8, 32), -4, 0), Ints((8,), 0, 32))
case("reduction", "Functional.binary_cross_entropy_with_logits", X((8, 64), -4, 4), X((8, 64), 0, 1))
case("reduction", "Functional.binary_cross_entropy", X((8, 64), 0.05, 0.95), X((8, 64), 0, 1))
case("reduction", "Functional.kl_div", X((8, 64), -4, 0), X((8, 64), 0, 1), reduction="batchmean")
case("reduction", "Functional.cross_entropy", X((8, 32), -4, 4), Ints((8,), 0, 32), label_smoothing=0.1)

# --- matmul and convolution: dot products accumulated in float32
case("matmul", "Torch.matmul", X((16, 64)), X((64, 32)))
case("matmul", "Torch.matmul", X((4, 16, 64)), X((4, 64, 8)))  # batched (bmm)
case("matmul", "Torch.matmul", X((64,)), X((64, 16)))
case("matmul", "Functional.linear", X((4, 8, 64)), X((32, 64)), X((32,)))
case("matmul", "Functional.scaled_dot_product_attention", X((2, 2, 8, 32)), X((2, 2, 8, 32)), X((2, 2, 8, 16)))
case("matmul", "Functional.conv2d", X((2, 8, 10, 10)), X((16, 8, 3, 3)), X((16,)))
case("matmul", "Functional.conv2d", X((2, 8, 10, 10)), X((8, 4, 3, 3)), None, 2, 1, 1, 2)  # stride, padding, groups
case("matmul", "Functional.conv1d", X((2, 8, 20)), X((16, 8, 5)), X((16,)))

case("matmul", "Torch.addmm", X((16, 32)), X((16, 64)), X((64, 32)))
case("matmul", "Torch.baddbmm", X((4, 16, 8)), X((4, 16, 64)), X((4, 64, 8)), beta=0.5, alpha=0.25)
case("matmul", "Functional.conv_transpose2d", X((2, 8, 6, 6)), X((8, 4, 3, 3)), X((4,)), 2, 1)

# --- data movement and selection: the values themselves
case("movement", "Torch.transpose", X((4, 8, 16)), 0, -1)
case("movement", "Tensor.permute", X((4, 8, 16)), 2, 0, 1)
case("movement", "Tensor.reshape", X((4, 8, 16)), 32, -1)
case("movement", "Torch.cat", [X((4, 16)), X((2, 16))])
case("movement", "Torch.stack", [X((4, 16)), X((4, 16))], 1)
case("movement", "Torch.split", X((10, 16)), 4)
case("movement", "Torch.gather", X((8, 16)), 1, Ints((8, 5), 0, 16))
case("movement", "Torch.index_select", X((8, 16)), 0, Ints((5,), 0, 8))
case("movement", "Functional.embedding", Ints((4, 6), 0, 20), X((20, 16)))
case("movement", "Torch.masked_fill", X((8, 16)), Bools((16,)), 0.1)
case("movement", "Torch.triu", X((8, 16)), 1)
case("movement", "Torch.amax", X((8, 16)), 1)
case("movement", "Functional.max_pool2d", X((2, 4, 8, 8)), 2)
case("movement", "Tensor.to", X((8, 16), -1e5, 1e5), torch.float16)
case("movement", "Tensor.to", X((8, 16), -1e5, 1e5), torch.bfloat16)
case("movement", "Tensor.long", X((8, 16), -100, 100))

case("movement", "Torch.topk", X((8, 16)), 4)
case("movement", "Torch.max", X((8, 16)), 1)
case("movement", "Torch.amin", X((8, 16)), 0)
case("movement", "Torch.tril", X((8, 16)))
case("movement", "Torch.scatter", X((8, 16)), 1, Ints((8, 4), 0, 16), X((8, 4)))
case("movement", "Torch.repeat_interleave", X((4, 16)), 2, 0)
case("movement", "Tensor.masked_fill", X((8, 16)), Bools((8, 16)), -1e4)
case("movement", "Torch.lt", X((8, 16)), X((16,)))

# --- integers: exact, near 1e9 (float32 would be off by tens)
BIG = (1_000_000_001, 999_999_999, -1_000_000_007, 1_073_741_823, 123_456_789, -987_654_321)
case("integer", "Torch.add", Ints((6,), values=BIG), Ints((6,), values=(7, 1_000_000_003, -3, 1, 2, 3)))
case("integer", "Torch.sub", Ints((6,), values=BIG), Ints((6,), -1000, 1000))
case("integer", "Torch.mul", Ints((6,), values=BIG), Ints((6,), -3000, 3000))
case("integer", "Torch.add", Ints((6,), values=BIG, dtype="int32"), Ints((6,), -1000, 1000, dtype="int32"))
case("integer", "Torch.sum", Ints((6,), values=BIG))
case("integer", "Torch.cumsum", Ints((6,), values=BIG), 0)
case("integer", "Torch.div", Ints((6,), values=BIG), Ints((6,), 1, 1000), rounding_mode="floor")
case("integer", "Torch.neg", Ints((6,), values=BIG))


case("integer", "Functional.one_hot", Ints((6,), 0, 5), 5)
case("integer", "Torch.logical_and", Bools((4, 8)), Bools((4, 8)))


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


class Run:
    """One case in one dtype: draws its inputs and saves its tensors."""

    def __init__(self, out_dir, index, dtype):
        self.out_dir = out_dir
        self.index = index
        self.dtype = dtype
        self.rng = np.random.default_rng([SEED, index])

    def save(self, what, t):
        file = f"{self.index:03}_{what}.npy"
        np.save(self.out_dir / file, numpy_array(t))
        return file

    def realize(self, value, path):
        """(torch value, JSON value, description) of a case argument."""
        if isinstance(value, X):
            t = torch.from_numpy(self.rng.uniform(value.low, value.high, value.shape)).to(self.dtype)
        elif isinstance(value, Ints):
            data = value.values if value.values is not None else self.rng.integers(value.low, value.high, value.shape)
            t = torch.tensor(np.asarray(data), dtype=getattr(torch, value.dtype))
        elif isinstance(value, Bools):
            t = torch.from_numpy(self.rng.random(value.shape) < 0.5)
        elif isinstance(value, list):
            parts = [self.realize(v, f"{path}.{i}") for i, v in enumerate(value)]
            return [p[0] for p in parts], [p[1] for p in parts], "[" + ", ".join(p[2] for p in parts) + "]"
        elif isinstance(value, torch.dtype):
            return value, {"dtype": dtype_name(value)}, str(value)
        else:
            return value, value, repr(value)
        text = f"{dtype_name(t.dtype)}{list(t.shape)}"
        return t, {"tensor": self.save(path, t), "dtype": dtype_name(t.dtype)}, text


def flatten(result):
    """The results of a call as a flat list."""
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in flatten(r)]
    return [result]


def run_case(out_dir, index, cls, name, args, kwargs, dtype):
    """Runs one case in one dtype; returns its index entry."""
    run = Run(out_dir, index, getattr(torch, dtype))
    parts = [run.realize(a, f"arg{i}") for i, a in enumerate(args)]
    kw_parts = {k: run.realize(v, f"kw_{k}") for k, v in kwargs.items()}
    with torch.no_grad():
        outputs = flatten(default_reference(name)(*[p[0] for p in parts], **{k: p[0] for k, p in kw_parts.items()}))
    texts = [p[2] for p in parts] + [f"{k}={p[2]}" for k, p in kw_parts.items()]
    return {
        "class": cls,
        "name": name,
        "dump_name": name,
        "framework": "pytorch",
        "dtype": dtype,
        "call": f"{name}({', '.join(texts)})",
        "args": [p[1] for p in parts],
        "kwargs": [[k, p[1]] for k, p in kw_parts.items()],
        "outputs": [{"file": run.save(f"out{i}", o), "dtype": dtype_name(o.dtype)} for i, o in enumerate(outputs)],
    }


def main():
    out_dir = Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    entries = []
    for cls, name, args, kwargs in CASES:
        for dtype in ["int64"] if cls == "integer" else DTYPES:
            try:
                entries.append(run_case(out_dir, len(entries), cls, name, args, kwargs, dtype))
            except Exception as e:
                raise SystemExit(f"{name} in {dtype}: torch failed: {e!r}")
    (out_dir / "cases.json").write_text(json.dumps({"cases": entries}, indent=1))
    print(f"{len(entries)} runs written to {out_dir}")


if __name__ == "__main__":
    main()
