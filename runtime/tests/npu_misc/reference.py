"""The two oracles of runtime/tests/npu_misc_agreement.rs for the `NPU.`
entries of runtime/src/ops/npu_misc.rs: every case is computed by a torch
composition in float64 written here (forward, and backward through
autograd with random output gradients) and, where msprobe 26.2.0 has a
bench function for it, by that function (and its backward function)
imported from the mindstudio-probe wheel, on the same inputs.

Usage: reference.py OUT_DIR

msprobe 26.2.0 is found as runtime/tests/npu/msprobe26.py says ($MSPROBE_26
and $MSPROBE_26_PT_EXTRA, default beside the test Python's environment);
each bench module imported here is in its MODULES, which the set-up checks.

cases.json holds {"cases": [...]}, one object per case:
  name, call          the op-table name and a readable description
  args, kwargs        arguments as in runtime/tests/agreement/reference.py
                      ({"tensor": file, "dtype": name}, JSON scalars, lists)
  differentiate       per top-level argument: is it a differentiated tensor
  grad_outputs        per output a file or null, when the backward runs
  dtypes              the dtype of each output (torch_npu's)
  oracles             [{"oracle", "tolerance", "why", "outputs", "grads"}]:
                      per oracle the files of the outputs (null where the
                      output is None) and of the input gradients (null where
                      the oracle has none), compared within `tolerance`
                      relative to the result's largest value
Float inputs are float32 values (they are exact in float64), so the
runtime's logical float32 tensors hold the very same numbers.
"""

import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.append(str(Path(__file__).resolve().parent.parent / "npu"))
from msprobe26 import paths  # noqa: E402

sys.path[len(sys.path):] = paths()

import compositions as C  # noqa: E402
from msprobe.pytorch.bench_functions.apply_adam import npu_apply_adam as ms_apply_adam
from msprobe.pytorch.bench_functions.apply_adam_w import npu_apply_adam_w as ms_apply_adam_w
from msprobe.pytorch.bench_functions.confusion_transpose import (
    npu_confusion_transpose as ms_confusion_transpose,
    npu_confusion_transpose_backward as ms_confusion_transpose_backward,
)
from msprobe.pytorch.bench_functions.group_norm_silu import npu_group_norm_silu as ms_group_norm_silu
from msprobe.pytorch.bench_functions.layer_norm_eval import npu_layer_norm_eval as ms_layer_norm_eval
from msprobe.pytorch.bench_functions.linear import npu_linear as ms_linear, npu_linear_backward as ms_linear_backward
from msprobe.pytorch.bench_functions.matmul_backward import matmul_backward as ms_matmul_backward
from msprobe.pytorch.bench_functions.moe_gating_top_k_softmax import (
    npu_moe_gating_top_k_softmax as ms_moe_gating_top_k_softmax,
)
from msprobe.pytorch.bench_functions.sort_v2 import npu_sort_v2 as ms_sort_v2

EXACT = 1e-9

OUT = Path(sys.argv[1])
COUNTER = [0]


def save(t):
    """Saves a tensor as .npy (float64, int64 or bool) and returns its file name."""
    COUNTER[0] += 1
    name = f"t{COUNTER[0]}.npy"
    t = t.detach()
    t = t.to(torch.float64) if t.is_floating_point() else (t if t.dtype == torch.bool else t.to(torch.int64))
    np.save(OUT / name, t.contiguous().numpy())
    return name


def rand(seed, *shape, low=-2.0, high=2.0):
    """Seeded float32 values as a float64 tensor."""
    g = np.random.default_rng(seed)
    return torch.from_numpy(g.uniform(low, high, shape).astype(np.float32).astype(np.float64))


class Arg:
    """A tensor argument: its value and its logical dtype in the dump."""

    def __init__(self, value, dtype="float32", grad=False):
        self.value, self.dtype, self.grad = value, dtype, grad


def encode(v):
    if isinstance(v, Arg):
        return {"tensor": save(v.value), "dtype": v.dtype}
    if isinstance(v, (list, tuple)):
        return [encode(x) for x in v]
    return v


def plain(v):
    if isinstance(v, Arg):
        return v.value
    if isinstance(v, (list, tuple)):
        return type(v)(plain(x) for x in v)
    return v


def as_list(r):
    return list(r) if isinstance(r, (list, tuple)) else [r]


CASES = []


def case(name, call, args, kwargs, dtypes, composition, msprobe=None, ms_backward=None, why="", tolerance=EXACT, seed=0):
    """One case: `composition(*args, **kwargs)` in float64 (differentiated
    where args are marked `grad`), and `msprobe` the same way (or None);
    `ms_backward(grad_outputs, *args, **kwargs)` gives msprobe's input
    gradients in the order of the differentiated arguments (None where it
    has none)."""
    diff_args = [a for a in args + [v for _, v in kwargs] if isinstance(a, Arg) and a.grad]
    leaves = {id(a): a.value.clone().requires_grad_(True) for a in diff_args}

    def bind(v):
        if isinstance(v, Arg) and id(v) in leaves:
            return leaves[id(v)]
        return plain(v)

    outs = as_list(composition(*[bind(a) for a in args], **{k: bind(v) for k, v in kwargs}))
    entry = {
        "name": name,
        "call": call,
        "args": [encode(a) for a in args],
        "kwargs": [[k, encode(v)] for k, v in kwargs],
        "differentiate": [isinstance(a, Arg) and a.grad for a in args + [v for _, v in kwargs]],
        "dtypes": dtypes,
        "grad_outputs": None,
    }
    oracles = [{"oracle": "torch composition", "tolerance": EXACT, "why": "", "outputs": [None if o is None else save(o) for o in outs], "grads": None}]
    if diff_args:
        gouts = [rand(seed + 100 + i, *o.shape) if o is not None and o.is_floating_point() else None for i, o in enumerate(outs)]
        pairs = [(o, g) for o, g in zip(outs, gouts) if g is not None]
        grads = torch.autograd.grad([o for o, _ in pairs], [leaves[id(a)] for a in diff_args], [g for _, g in pairs])
        entry["grad_outputs"] = [None if g is None else save(g) for g in gouts]
        oracles[0]["grads"] = [save(g) for g in grads]
    if msprobe is not None:
        ms_outs = as_list(msprobe(*[plain(a) for a in args], **{k: plain(v) for k, v in kwargs}))
        o = {"oracle": "msprobe 26.2.0", "tolerance": tolerance, "why": why, "outputs": [None if t is None else save(t) for t in ms_outs], "grads": None}
        if ms_backward is not None:
            gouts = [None if f is None else torch.from_numpy(np.load(OUT / f)) for f in entry["grad_outputs"]]
            o["grads"] = [None if g is None else save(g) for g in ms_backward(gouts, *[plain(a) for a in args], **{k: plain(v) for k, v in kwargs})]
        oracles.append(o)
    entry["oracles"] = oracles
    CASES.append(entry)


# ---- npu_linear(input, weight, bias=None)
for seed, bias in [(1, True), (2, False)]:
    x, w = Arg(rand(seed, 4, 6), grad=True), Arg(rand(seed + 1, 5, 6), grad=True)
    b = Arg(rand(seed + 2, 5), grad=True) if bias else None
    args = [x, w] + ([b] if bias else [])
    case(
        "NPU.npu_linear", f"npu_linear(x[4,6], w[5,6], bias={bias})", args, [], ["float32"], C.linear,
        msprobe=lambda x, w, b=None: ms_linear(x, w, b),
        ms_backward=lambda g, x, w, b=None: list(ms_linear_backward(g[0], x, w)) + ([None] if b is not None else []),
        seed=seed,
    )

# ---- npu_confusion_transpose(input, perm, shape, transpose_first)
for seed, (shape_in, perm, shape, first) in enumerate([((2, 3, 4), [0, 2, 1], [2, 12], True), ((2, 12), [1, 0, 2], [2, 3, 4], False), ((2, 3, 4, 5), [2, 0, 3, 1], [4, 2, 15], True)]):
    x = Arg(rand(10 + seed, *shape_in), grad=True)
    case(
        "NPU.npu_confusion_transpose", f"npu_confusion_transpose({list(shape_in)}, {perm}, {shape}, {first})", [x, perm, shape, first], [], ["float32"], C.confusion_transpose,
        msprobe=ms_confusion_transpose,
        # torch_npu's derivative: npu_confusion_transpose_backward(grad, perm, self.sizes(), !transpose_first).
        ms_backward=lambda g, x, perm, shape, first: [ms_confusion_transpose_backward(g[0], perm, list(x.shape), not first)],
        seed=10 + seed,
    )


# ---- npu_apply_adam(beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, use_locking, use_nesterov, out=(var, m, v))
for seed, nesterov in [(20, False), (21, True)]:
    state = [Arg(rand(seed, 3, 4)), Arg(rand(seed + 1, 3, 4)), Arg(rand(seed + 2, 3, 4, low=0.0, high=1.0))]
    g = Arg(rand(seed + 3, 3, 4))
    case(
        "NPU.npu_apply_adam", f"npu_apply_adam(use_nesterov={nesterov})", [0.729, 0.997, 0.01, 0.9, 0.999, 1e-8, g, False, nesterov], [["out", state]],
        ["float32"] * 3, C.apply_adam, msprobe=ms_apply_adam,
    )


# ---- npu_apply_adam_w(beta1_power, beta2_power, lr, weight_decay, beta1, beta2, epsilon, grad, max_grad_norm, amsgrad, maximize, out=(var, m, v))
for seed, amsgrad, maximize in [(30, False, False), (31, False, True), (32, True, False)]:
    state = [Arg(rand(seed, 2, 5)), Arg(rand(seed + 1, 2, 5)), Arg(rand(seed + 2, 2, 5, low=0.0, high=1.0))]
    g = Arg(rand(seed + 3, 2, 5))
    # msprobe's bench draws max_grad_norm as torch.rand(shape) * 10 - 5 under
    # amsgrad: the same draw, seeded, is this case's max_grad_norm.
    torch.manual_seed(seed)
    mgn = Arg((torch.rand((2, 5)) * 10.0 - 5.0).to(torch.float64)) if amsgrad else None

    def ms_adam_w(*a, seed=seed, **k):
        torch.manual_seed(seed)
        return ms_apply_adam_w(*a, **k)

    case(
        "NPU.npu_apply_adam_w", f"npu_apply_adam_w(amsgrad={amsgrad}, maximize={maximize})",
        [0.9, 0.999, 0.01, 0.1, 0.9, 0.999, 1e-8, g, mgn, amsgrad, maximize], [["out", state]],
        ["float32"] * 3, C.apply_adam_w, msprobe=ms_adam_w,
        why="msprobe draws max_grad_norm at random under amsgrad: seeded to the case's own",
    )


# ---- npu_layer_norm_eval(input, normalized_shape, weight=None, bias=None, eps=1e-05)
case("NPU.npu_layer_norm_eval", "npu_layer_norm_eval(x[3,8], [8])", [Arg(rand(40, 3, 8)), [8]], [], ["float32"], C.layer_norm_eval, msprobe=ms_layer_norm_eval)
case("NPU.npu_layer_norm_eval", "npu_layer_norm_eval(x[2,3,4], [3,4], weight, bias, eps=1e-3)", [Arg(rand(41, 2, 3, 4)), [3, 4], Arg(rand(42, 3, 4)), Arg(rand(43, 3, 4))], [["eps", 1e-3]], ["float32"], C.layer_norm_eval)


# ---- npu_group_norm_silu(input, weight, bias, group, eps=1e-05) -> (out, mean, rstd)
case("NPU.npu_group_norm_silu", "npu_group_norm_silu(x[2,6,3,4], group=3)", [Arg(rand(50, 2, 6, 3, 4)), Arg(rand(51, 6)), Arg(rand(52, 6)), 3], [], ["float32"] * 3, C.group_norm_silu, msprobe=lambda x, w, b, g: ms_group_norm_silu(x, w, b, g, 1e-5))
case("NPU.npu_group_norm_silu", "npu_group_norm_silu(x[3,4,2,2], group=2, eps=0.01)", [Arg(rand(53, 3, 4, 2, 2)), Arg(rand(54, 4)), Arg(rand(55, 4)), 2], [["eps", 0.01]], ["float32"] * 3, C.group_norm_silu, msprobe=lambda x, w, b, g, eps: ms_group_norm_silu(x, w, b, g, eps))


# ---- npu_moe_gating_top_k_softmax(x, finished=None, k=1) -> (y, expert_idx, row_idx)
MOE_WHY = "msprobe computes the softmax in float32 (x.float())"
case("NPU.npu_moe_gating_top_k_softmax", "npu_moe_gating_top_k_softmax(x[5,8], None, k=2)", [Arg(rand(60, 5, 8)), None], [["k", 2]], ["float32", "int32", "int32"], C.moe_gating_top_k_softmax, msprobe=ms_moe_gating_top_k_softmax, tolerance=1e-6, why=MOE_WHY)
finished = Arg(torch.tensor([False, True, False, True]), dtype="bool")
case("NPU.npu_moe_gating_top_k_softmax", "npu_moe_gating_top_k_softmax(x[4,6], finished, 3)", [Arg(rand(61, 4, 6)), finished, 3], [], ["float32", "int32", "int32"], C.moe_gating_top_k_softmax, msprobe=ms_moe_gating_top_k_softmax, tolerance=1e-6, why=MOE_WHY)


# ---- npu_sort_v2(self, dim=-1, descending=False, out=None)
case("NPU.npu_sort_v2", "npu_sort_v2(x[3,7])", [Arg(rand(70, 3, 7))], [], ["float32"], C.sort_v2, msprobe=ms_sort_v2)
case("NPU.npu_sort_v2", "npu_sort_v2(x[4,3,2], dim=0, descending=True)", [Arg(rand(71, 4, 3, 2))], [["dim", 0], ["descending", True]], ["float32"], C.sort_v2, msprobe=ms_sort_v2)


# ---- matmul_backward(grad, self, other, mask) -> (grad_self, grad_other)
for seed, (sa, sb) in enumerate([((5,), (5,)), ((3, 4), (4,)), ((4,), (4, 3)), ((2, 3, 4), (4, 5)), ((2, 3, 4), (4,)), ((3, 4), (2, 4, 5)), ((4,), (2, 4, 5)), ((2, 3, 4), (2, 4, 5))]):
    a, b = rand(80 + seed, *sa), rand(90 + seed, *sb)
    g = rand(100 + seed, *torch.matmul(a, b).shape)
    case("NPU.matmul_backward", f"matmul_backward(grad, {list(sa)}, {list(sb)}, [True, True])", [Arg(g), Arg(a), Arg(b), [True, True]], [], ["float32", "float32"], C.matmul_backward, msprobe=ms_matmul_backward)
# Broadcast batch dims and masks: msprobe's function does neither (it calls
# .cpu() on a masked None and does not sum a broadcast operand's gradient).
a, b = rand(110, 3, 4), rand(111, 2, 2, 4, 5)
case("NPU.matmul_backward", "matmul_backward(grad, [3,4], [2,2,4,5], [False, True])", [Arg(rand(112, 2, 2, 3, 5)), Arg(a), Arg(b), [False, True]], [], ["float32", "float32"], C.matmul_backward)
a, b = rand(113, 2, 1, 3, 4), rand(114, 3, 4, 2)
case("NPU.matmul_backward", "matmul_backward(grad, [2,1,3,4], [3,4,2], [True, False])", [Arg(rand(115, 2, 3, 3, 2)), Arg(a), Arg(b), [True, False]], [], ["float32", "float32"], C.matmul_backward)

(OUT / "cases.json").write_text(json.dumps({"cases": CASES}, indent=1))
