"""Writes the tensor fixtures of runtime/tests/io.rs and their exact values.

Run once with the project's Python environment (torch 2.15, numpy 1.26):

    ~/.cache/msprobe-rs/venv/bin/python runtime/tests/data/make_fixtures.py

The .pt files are written the way msprobe's PyTorch dumper writes them
(`torch.save(t.clone().contiguous().detach(), path)`, a bare tensor), plus a
transposed view and a view with a storage offset saved as they are. The
.npy files cover every little-endian dtype the reader accepts, the three
header versions and a 0-d array; `bad_*.npy` must be rejected. expected.json
records, per file, the stored dtype, the shape and every value as a string
(Python's repr, so NaN, infinities and -0.0 survive JSON), in row-major order.
"""
import json
import os
import struct

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
expected = {}


def record(name, dtype, array):
    """array: numpy array in logical order; floats are widened to float64 first."""
    flat = array.reshape(-1)
    if array.dtype.kind == "f":
        values = [repr(float(v)) for v in flat.astype(np.float64)]
    elif array.dtype.kind == "b":
        values = ["true" if v else "false" for v in flat]
    else:
        values = [str(int(v)) for v in flat]
    expected[name] = {"dtype": dtype, "shape": list(array.shape), "values": values}


def save_pt(name, tensor, dtype, clone=True):
    t = tensor.clone().contiguous().detach() if clone else tensor
    torch.save(t, os.path.join(HERE, name))
    wide = t.to(torch.float64) if t.is_floating_point() else t
    record(name, dtype, wide.numpy())


def save_npy(name, array, dtype, version=None):
    path = os.path.join(HERE, name)
    if version is None:
        np.save(path, array)
    else:
        with open(path, "wb") as f:
            np.lib.format.write_array(f, array, version=version)
    record(name, dtype, array)


FLOATS = [1.0, -2.5, 1.0 / 3.0, float("nan"), float("inf"), float("-inf"), -0.0, 1e-40]

save_pt("bf16.pt", torch.tensor(FLOATS, dtype=torch.bfloat16).reshape(2, 4), "bf16")
save_pt("f16.pt", torch.tensor(FLOATS[:7] + [6e-8], dtype=torch.float16), "f16")
save_pt("f32.pt", torch.tensor(FLOATS, dtype=torch.float32).reshape(2, 2, 2), "f32")
save_pt("f64.pt", torch.tensor(FLOATS + [5e-324, 1.7976931348623157e308], dtype=torch.float64), "f64")
save_pt("i64.pt", torch.tensor([0, -1, 2**63 - 1, -(2**63), 1000], dtype=torch.int64), "i64")
save_pt("i32.pt", torch.tensor([[0, -1], [2**31 - 1, -(2**31)]], dtype=torch.int32), "i32")
save_pt("i16.pt", torch.tensor([0, -1, 32767, -32768], dtype=torch.int16), "i16")
save_pt("i8.pt", torch.tensor([0, -1, 127, -128], dtype=torch.int8), "i8")
save_pt("u8.pt", torch.tensor([0, 1, 255], dtype=torch.uint8), "u8")
save_pt("u16.pt", torch.tensor([0, 1, 65535], dtype=torch.uint16), "u16")
save_pt("bool.pt", torch.tensor([[True, False, True]]), "bool")
save_pt("scalar.pt", torch.tensor(3.5), "f32")
save_pt("empty.pt", torch.zeros(0, 3), "f32")
base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
save_pt("transposed.pt", base.t(), "f32", clone=False)
save_pt("offset.pt", torch.arange(10, dtype=torch.int64).reshape(5, 2)[1:], "i64", clone=False)
save_pt("strided.pt", torch.arange(24, dtype=torch.float64).reshape(4, 6)[1:, ::2], "f64", clone=False)

npy_values = np.array(FLOATS)
save_npy("f2.npy", npy_values.astype(np.float16), "f16")
save_npy("f4.npy", npy_values.astype(np.float32).reshape(2, 4), "f32")
save_npy("f8.npy", npy_values, "f64")
save_npy("i1.npy", np.array([0, -1, 127, -128], dtype=np.int8), "i8")
save_npy("i2.npy", np.array([0, -1, 32767, -32768], dtype=np.int16), "i16")
save_npy("i4.npy", np.array([0, -1, 2**31 - 1, -(2**31)], dtype=np.int32), "i32")
save_npy("i8.npy", np.array([[0, -1], [2**63 - 1, -(2**63)]], dtype=np.int64), "i64")
save_npy("u1.npy", np.array([0, 1, 255], dtype=np.uint8), "u8")
save_npy("u2.npy", np.array([0, 1, 65535], dtype=np.uint16), "u16")
save_npy("u4.npy", np.array([0, 1, 2**32 - 1], dtype=np.uint32), "u32")
save_npy("u8.npy", np.array([0, 1, 2**64 - 1], dtype=np.uint64), "u64")
save_npy("b1.npy", np.array([True, False, True, True]).reshape(2, 2), "bool")
save_npy("scalar.npy", np.array(2.25, dtype=np.float64), "f64")
save_npy("empty.npy", np.zeros((2, 0), dtype=np.float32), "f32")
save_npy("v2.npy", np.array([1.5, -1.5], dtype=np.float32), "f32", version=(2, 0))
save_npy("v3.npy", np.array([7, 8], dtype=np.int32), "i32", version=(3, 0))

np.save(os.path.join(HERE, "bad_fortran.npy"), np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
np.save(os.path.join(HERE, "bad_big_endian.npy"), np.arange(3, dtype=">f4"))
np.save(os.path.join(HERE, "bad_complex.npy"), np.arange(3, dtype=np.complex64))

with open(os.path.join(HERE, "expected.json"), "w") as f:
    json.dump(expected, f, indent=1, sort_keys=True)
    f.write("\n")

# Python's float formatting, for runtime/tests/pyfmt.rs: repr() and
# format(x, ".6g") of edge values and of random doubles over all exponents.
rng = np.random.default_rng(42)
specials = [0.0, -0.0, 1.0, 0.1, 1e-4, 1e-5, 1e16, 1e15, 9.999995e-5, 999999.5, 0.9999995, 1234565.0,
            5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 0.5, 2.5, 1e22, 1e23]
randoms = [float(m) * 10.0 ** int(e) for m, e in zip(rng.uniform(-10, 10, 300), rng.integers(-30, 30, 300))]
randoms += [float(v) for v in rng.standard_normal(100).astype(np.float32)]
randoms += [float(k) + f for k, f in zip(rng.integers(2**50, 2**51, 60), [0.25, 0.75] * 30)]  # repr ties
randoms += [float(v) for v in rng.integers(0, 2**63, 100, dtype=np.int64).view(np.float64) if np.isfinite(v)]
rows = [json.dumps([format(struct.unpack("<Q", struct.pack("<d", v))[0], "016x"), repr(v), format(v, ".6g")])
        for v in specials + randoms]
with open(os.path.join(HERE, "pyfmt.json"), "w") as f:
    f.write("[\n" + ",\n".join(rows) + "\n]\n")
