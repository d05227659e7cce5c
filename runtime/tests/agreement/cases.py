"""The cases of the runtime's agreement test (runtime/tests/agreement.rs).

Every name of the runtime's op table (runtime/src/ops) has at least one case
here; the Rust test fails when one is missing. A case is one call, written as
it appears in a dump: the dump name ("Tensor.__add__", "Mint.split",
"MS.Functional.gather"), the positional and keyword arguments, and the torch
function that is the reference. reference.py runs each case in torch in
float64 (with floating dtype arguments raised to float64: `bench_reference`);
the Rust test replays it with the runtime and compares.

Arguments are plain Python values (ints, floats, bools, strings, lists,
tuples, slices, Ellipsis, None, torch dtypes) and tensor specs: `T` (random
float64), `I` (random integers), `B` (random bools), `V` (given values).
"""

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

# ---------------------------------------------------------------- tensor specs


@dataclass(frozen=True)
class Rand:
    """A random input tensor: floats uniform in [low, high), integers in
    [low, high), bools fair. Floats are always float64: the test compares
    the runtime's bench (f64) side with torch in f64."""

    shape: tuple
    dtype: str
    low: float = 0.0
    high: float = 1.0


@dataclass(frozen=True)
class Given:
    """An input tensor with given values, for indices, masks, targets and
    special values (-inf, zeros, overflow)."""

    values: Any
    dtype: str


def T(*shape, low=-2.0, high=2.0):
    """A random float64 tensor."""
    return Rand(shape, "float64", low, high)


def I(*shape, low=0, high=5, dtype="int64"):
    """A random integer tensor."""
    return Rand(shape, dtype, low, high)


def B(*shape):
    """A random bool tensor."""
    return Rand(shape, "bool")


def V(values, dtype="float64"):
    """A tensor with the given values (nested lists or a scalar for 0-d)."""
    return Given(values, dtype)


# ---------------------------------------------------------------- references


def _ms_gather(x, indices, axis, batch_dims=0):
    """mindspore.ops.gather: whole slices along `axis`, the index's shape
    replacing that axis (not torch.gather)."""
    assert batch_dims == 0
    axis = axis % x.dim()
    picked = torch.index_select(x, axis, indices.flatten())
    return picked.reshape(x.shape[:axis] + indices.shape + x.shape[axis + 1 :])


def _ms_transpose(x, *axes):
    """mindspore.Tensor.transpose(*axes): a permutation, reversed by default."""
    return x.permute(*axes) if axes else x.permute(*reversed(range(x.dim())))


def _ms_log_softmax(x, axis=-1):
    """mindspore.ops.log_softmax(logits, axis=-1)."""
    return F.log_softmax(x, dim=axis)


def _setitem(x, index, value):
    """`x[index] = value` on a copy; the result is the updated tensor."""
    y = x.clone()
    y[index] = value
    return y


# References whose torch function is not the one the name maps to.
SPECIAL = {
    "MS.Functional.gather": _ms_gather,
    "MS.Tensor.transpose": _ms_transpose,
    "MS.Functional.log_softmax": _ms_log_softmax,
    "Torch.vector_norm": torch.linalg.vector_norm,
    "Torch.gelu": F.gelu,
    "Torch.silu": F.silu,
    "Tensor.__setitem__": _setitem,
}


# Explicit casts to a floating dtype on the bench: it computes in float64
# throughout and only relabels (the runtime's Ctx::cast), so its reference
# keeps the float64 values. The dtype recorded is still the real call's.
BENCH_SPECIAL = {
    "Tensor.float": torch.Tensor.double,
    "Tensor.half": torch.Tensor.double,
    "Tensor.bfloat16": torch.Tensor.double,
}


def _raised(value):
    """A floating dtype argument raised to float64 (others unchanged)."""
    return torch.float64 if isinstance(value, torch.dtype) and value.is_floating_point else value


def bench_reference(name, reference):
    """What the bench computes for `name`: the torch call with every
    floating dtype argument (`.to(torch.float16)`, `dtype=torch.float32`)
    raised to float64, since the bench never computes in a lowered
    precision; integer and bool casts are kept."""
    if name in BENCH_SPECIAL:
        return BENCH_SPECIAL[name]
    return lambda *args, **kwargs: reference(*map(_raised, args), **{k: _raised(v) for k, v in kwargs.items()})


def is_inplace(name):
    """Tensor.add_, Tensor.__iadd__ ...: they modify their first argument."""
    op = name.split(".")[-1]
    return name.startswith("Tensor.") and (op.startswith("__i") or (op.endswith("_") and not op.endswith("__")))


def default_reference(name):
    """The torch function a dump name means: Torch.X / Mint.X -> torch.X,
    Tensor.X -> torch.Tensor.X (on a clone for in-place ops),
    Functional.X / MintFunctional.X -> torch.nn.functional.X."""
    if name in SPECIAL:
        return SPECIAL[name]
    prefix, op = name.split(".")
    if prefix == "Tensor":
        method = getattr(torch.Tensor, op)
        if is_inplace(name):
            return lambda x, *args, **kwargs: method(x.clone(), *args, **kwargs)
        return method
    module = {"Torch": torch, "Mint": torch, "Functional": F, "MintFunctional": F}[prefix]
    return getattr(module, op)


# ---------------------------------------------------------------- cases


class Case:
    """One call to replay: the op-table name (with "MS." for
    MindSpore-specific meanings), the arguments, and the torch reference."""

    def __init__(self, name, args, kwargs):
        self.name = name
        self.args = args
        self.kwargs = kwargs
        self.reference = default_reference(name)
        # The values the bench must give (the reference gives the dtypes).
        self.bench = bench_reference(name, self.reference)
        # The runtime replays in-place ops forward only.
        self.backward = not is_inplace(name) and name != "Tensor.__setitem__"
        # Float tensor inputs (positional indices, keyword names) left out of
        # the backward, where torch defines no gradient for them.
        self.constants = set()

    @property
    def framework(self):
        """MS.* and Mint* names come from MindSpore dumps."""
        return "mindspore" if self.name.startswith(("MS.", "Mint")) else "pytorch"

    @property
    def dump_name(self):
        """The name as a dump spells it (without the table's "MS.")."""
        return self.name.removeprefix("MS.")

    def constant(self, *keys):
        """Marks float tensor inputs as not differentiated."""
        self.constants |= set(keys)
        return self


CASES = []


def case(name, *args, **kwargs):
    """Adds the call `name(*args, **kwargs)`."""
    c = Case(name, args, kwargs)
    CASES.append(c)
    return c


def each(names, *args, **kwargs):
    """The same call under several names (the aliases of an entry)."""
    for n in names:
        case(n, *args, **kwargs)


INF = math.inf

# --- elementwise arithmetic

each(["Torch.add", "Tensor.add", "Tensor.__add__", "Tensor.__radd__", "Mint.add"], T(3, 4), T(4))
case("Torch.add", T(3, 4), T(3, 4), alpha=2.5)
case("Torch.add", T(2, 1, 4), T(3, 1))  # both sides broadcast
case("Torch.add", T(3), 2, alpha=3)  # scalar other, int alpha
case("Torch.add", I(3, 4), 2.5)  # int tensor + float scalar -> float32
case("Torch.add", I(3), T())  # int tensor + 0-d float tensor -> float64
case("Torch.add", I(3, 4, dtype="int32"), V(7, "int64"))  # a 0-d tensor does not widen int32
case("Tensor.__radd__", T(3, 4), 1.5)
each(["Tensor.add_", "Tensor.__iadd__"], T(3, 4), T(4))
case("Tensor.add_", T(3, 4), T(3, 4), alpha=-0.5)
case("Tensor.add_", I(3, 4), 2)

each(["Torch.sub", "Tensor.sub", "Tensor.__sub__", "Mint.sub"], T(3, 4), T(4))
case("Torch.sub", T(3, 4), T(3, 1), alpha=0.5)
case("Tensor.__rsub__", T(3, 4), 3.0)
case("Tensor.__rsub__", T(3, 4), T(4))

each(["Torch.mul", "Tensor.mul", "Tensor.__mul__", "Tensor.__rmul__", "Mint.mul"], T(3, 4), T(3, 1))
case("Torch.mul", I(3, 4), 0.5)
case("Torch.mul", B(3, 4), T(4))  # bool * float
each(["Tensor.mul_", "Tensor.__imul__"], T(3, 4), T(4))

each(["Torch.div", "Tensor.div", "Tensor.__truediv__", "Mint.div", "Torch.true_divide"], T(3, 4), T(4, low=0.5, high=2.0))
case("Torch.div", I(3, 4, low=-9, high=9), V([3, -4, 5, 7], "int64"))  # int / int -> float32
case("Torch.div", T(3, 4, low=-5, high=5), V([-1.5, 0.7, 2.0, -3.0]), rounding_mode="floor")
case("Torch.div", T(3, 4, low=-5, high=5), V([-1.5, 0.7, 2.0, -3.0]), rounding_mode="trunc")
case("Torch.div", I(3, 4, low=-9, high=9), V([3, -4, 5, -2], "int64"), rounding_mode="floor")
case("Torch.div", I(3, 4, low=-9, high=9), V([3, -4, 5, -2], "int64"), rounding_mode="trunc")
case("Tensor.__truediv__", T(3, 4), 4)
case("Tensor.__rtruediv__", T(3, 4, low=0.5, high=2.0), 2.0)

each(["Torch.neg", "Tensor.neg", "Tensor.__neg__", "Mint.neg"], T(3, 4))
case("Torch.neg", I(3, 4, low=-5))

each(["Torch.square", "Tensor.square", "Mint.square"], T(3, 4))
case("Torch.square", I(3, 4, low=-5))

each(["Torch.pow", "Tensor.pow", "Tensor.__pow__", "Mint.pow"], T(3, 4), 3)  # negative base, integral exponent
case("Torch.pow", T(3, 4), -2)
case("Torch.pow", T(3, 4), 2)
case("Torch.pow", T(3, 4, low=0.1), 0.5)
case("Torch.pow", T(3, 4, low=0.1), 2.5)
case("Torch.pow", T(3, 4, low=0.1), T(3, 4))  # tensor ** tensor, both differentiated
case("Torch.pow", T(3, 4), I(4, low=0, high=5))  # negative base, integer exponent tensor
case("Torch.pow", 2.0, T(3, 4))  # scalar base
case("Torch.pow", I(3, 4, low=-3), 2)  # stays int64
case("Torch.pow", I(3, 4, low=0), 0.5)  # int ** float -> float32

each(["Torch.sqrt", "Tensor.sqrt", "Mint.sqrt"], T(3, 4, low=0.1))
case("Torch.sqrt", I(3, 4, low=0, high=10))  # int -> float32
each(["Torch.rsqrt", "Tensor.rsqrt", "Mint.rsqrt"], T(3, 4, low=0.1))
each(["Torch.reciprocal", "Tensor.reciprocal", "Mint.reciprocal"], T(3, 4, low=0.1))
case("Torch.reciprocal", I(3, 4, low=1, high=10))

each(["Torch.clamp", "Tensor.clamp", "Mint.clamp", "Torch.clip"], T(3, 4), -0.5, 0.5)
case("Torch.clamp", T(3, 4), min=-0.5)  # only min
case("Torch.clamp", T(3, 4), max=0.5)  # only max
case("Torch.clamp", T(3, 4), T(4, low=-1, high=0), T(4, low=0, high=1))  # tensor bounds, differentiated
case("Torch.clamp", T(3, 4), min=T(3, 1))  # only a tensor min
case("Tensor.clamp", T(3, 4), min=1.0, max=-1.0)  # min > max: everything becomes max
case("Torch.clamp", I(3, 4, low=-5), min=0.5)  # int tensor, float bound -> float32

case("Tensor.addcmul_", T(3, 4), T(3, 4), T(4), value=0.5)
case("Tensor.addcdiv_", T(3, 4), T(3, 4), T(4, low=0.5, high=2.0), value=-2)
case("Tensor.lerp_", T(3, 4), T(3, 4), 0.3)
each(["Torch.addcmul", "Tensor.addcmul"], T(3, 4), T(3, 4), T(4), value=0.5)
case("Torch.addcmul", T(3, 4), T(3, 4), T(3, 4))
each(["Torch.addcdiv", "Tensor.addcdiv"], T(3, 4), T(3, 4), T(4, low=0.5, high=2.0), value=-2)
each(["Torch.lerp", "Tensor.lerp"], T(3, 4), T(3, 4), 0.3)
case("Torch.lerp", T(3, 4), T(3, 4), T(4, low=0, high=1))  # tensor weight, differentiated
case("Torch.lerp", T(3, 4), T(3, 4), 0.8)  # torch switches formula at weight 0.5

# --- reductions

each(["Torch.mean", "Tensor.mean", "Mint.mean"], T(2, 3, 4))
case("Torch.mean", T(2, 3, 4), 1, True)
case("Torch.mean", T(2, 3, 4), (0, -1))
case("Tensor.mean", T(2, 3, 4), dim=-1, keepdim=True)
case("Torch.mean", I(3, 4), dtype=torch.float64)  # int input needs dtype=
case("Torch.mean", T(3, 4), 0, dtype=torch.float16)
case("Mint.mean", T(2, 3, 4), dim=(1, 2), keepdim=True)

each(["Torch.sum", "Tensor.sum", "Mint.sum"], T(2, 3, 4))
case("Torch.sum", T(2, 3, 4), -1)
case("Torch.sum", T(2, 3, 4), (0, 2), keepdim=True)
case("Torch.sum", I(3, 4, dtype="int32"))  # -> int64
case("Torch.sum", B(3, 4), 1)  # bool -> int64
case("Torch.sum", I(3, 4), dtype=torch.float64)
case("Torch.sum", T(3, 4), 1, dtype=torch.bfloat16)
case("Torch.sum", T())  # 0-d

case("Torch.vector_norm", T(3, 4))
case("Torch.vector_norm", T(3, 4), 1, -1)
case("Torch.vector_norm", T(3, 4), INF)
case("Torch.vector_norm", T(3, 4), 0)
case("Torch.vector_norm", T(2, 3, 4), 3, (0, 2), True)
case("Torch.vector_norm", T(3, 4), 0.5, dim=1)
case("Torch.vector_norm", T(3, 4), INF, dim=1)  # max |x| over part of the dims
case("Torch.vector_norm", T(3, 4), -INF)
case("Torch.vector_norm", T(3, 4), dtype=torch.float64)

case("Torch._foreach_norm", [T(3), T(2, 3), T()])
case("Torch._foreach_norm", [T(3), T(2, 3)], 1)

# --- neural-network functions

each(["Torch.matmul", "Tensor.matmul", "Tensor.__matmul__", "Mint.matmul"], T(3, 4), T(4, 5))
case("Torch.matmul", T(4), T(4))
case("Torch.matmul", T(4), T(4, 5))
case("Torch.matmul", T(3, 4), T(4))
case("Torch.matmul", T(2, 3, 4), T(4, 5))
case("Torch.matmul", T(2, 1, 3, 4), T(5, 4, 2))  # batch dims broadcast
case("Torch.matmul", T(4), T(2, 4, 3))

each(["Functional.linear", "MintFunctional.linear"], T(2, 3, 4), T(5, 4), T(5))
case("Functional.linear", T(3, 4), T(5, 4))
case("Functional.linear", T(4), T(5, 4), bias=T(5))

each(["Functional.softmax", "MintFunctional.softmax"], T(3, 5), dim=-1)
case("Functional.softmax", T(3, 4))  # implicit dim 1
case("Functional.softmax", T(2, 3, 4))  # implicit dim 0
case("Functional.softmax", V([[0.5, -INF, 1.0], [-INF, -INF, -INF], [2.0, 0.0, -INF]]), dim=1)  # a fully masked row is NaN
case("Functional.softmax", I(3, 4), 1, dtype=torch.float64)
case("Functional.softmax", T(3, 4), -1, dtype=torch.float16)  # the bench does not round to the dtype
each(["Torch.softmax", "Tensor.softmax", "Mint.softmax"], T(2, 3, 4), 1)
case("Tensor.softmax", T(2, 3, 4), -1)

case("MS.Functional.log_softmax", T(3, 5))  # axis defaults to -1
case("MS.Functional.log_softmax", T(3, 5), axis=0)
each(["Functional.log_softmax", "MintFunctional.log_softmax"], T(3, 5), dim=1)
case("Functional.log_softmax", T(2, 3, 4))  # implicit dim 0
each(["Torch.log_softmax", "Tensor.log_softmax", "Mint.log_softmax"], T(2, 3, 4), -1)
case("Torch.log_softmax", I(3, 4), 1, dtype=torch.float64)
case("Torch.log_softmax", T(3, 4), 1, dtype=torch.float32)

each(["Functional.gelu", "MintFunctional.gelu", "Torch.gelu"], T(3, 4, low=-4, high=4))
case("Functional.gelu", T(3, 4, low=-4, high=4), approximate="tanh")

each(["Functional.silu", "MintFunctional.silu", "Torch.silu"], T(3, 4, low=-6, high=6))

each(["Functional.layer_norm", "MintFunctional.layer_norm", "Torch.layer_norm"], T(2, 3, 4), (4,), T(4), T(4))
case("Functional.layer_norm", T(2, 3, 4), (3, 4))  # no affine, two normalized dims
case("Functional.layer_norm", T(2, 3, 4), [4], weight=T(4), eps=1e-3)

each(["Functional.embedding", "MintFunctional.embedding"], I(2, 3, high=10), T(10, 4))
case("Functional.embedding", V([[0, 2, 0], [3, 0, 1]], "int64"), T(5, 4), padding_idx=0)  # no gradient to the padding row
case("Functional.embedding", V([4, 2, 4, 1], "int64"), T(5, 4), padding_idx=-1)
case("Functional.embedding", V([[1, 2, 1], [1, 3, 2]], "int64"), T(5, 4), scale_grad_by_freq=True)

# nll_loss defines no gradient for `weight`: it stays a constant.
each(["Functional.cross_entropy", "MintFunctional.cross_entropy"], T(4, 5), V([1, 0, 4, 2], "int64"))
case("Functional.cross_entropy", T(4, 5), V([1, 0, 4, 2], "int64"), reduction="sum")
case("Functional.cross_entropy", T(4, 5), V([1, 0, 4, 2], "int64"), reduction="none")
case("Functional.cross_entropy", T(4, 5), V([1, -100, 4, 2], "int64"))  # default ignore_index
case("Functional.cross_entropy", T(4, 5), V([1, 2, 4, 2], "int64"), ignore_index=2, reduction="sum")
case("Functional.cross_entropy", T(4, 5), V([1, 0, 4, 2], "int64"), label_smoothing=0.1)
case("Functional.cross_entropy", T(4, 5), V([1, 3, 4, 3], "int64"), weight=T(5, low=0.1), ignore_index=3, label_smoothing=0.2).constant("weight")
case("Functional.cross_entropy", T(4, 5), V([1, 3, 4, 0], "int64"), T(5, low=0.1), reduction="none", label_smoothing=0.3).constant(2)
case("Functional.cross_entropy", T(4, 5), T(4, 5, low=0.0, high=1.0))  # class probabilities, differentiated
case("Functional.cross_entropy", T(4, 5), T(4, 5, low=0.0, high=1.0), weight=T(5, low=0.1), label_smoothing=0.2).constant("weight")
case("Functional.cross_entropy", T(5), V(3, "int64"))  # unbatched [C] input

# Dropout: torch and the runtime draw different masks, so only the
# deterministic settings are compared here (agreement.rs checks that the
# runtime's own mask is reproducible).
each(["Functional.dropout", "MintFunctional.dropout"], T(3, 4), p=0.0)
case("Functional.dropout", T(3, 4), 0.5, training=False)

case("Functional.scaled_dot_product_attention", T(2, 2, 4, 8), T(2, 2, 5, 8), T(2, 2, 5, 6))
case("Functional.scaled_dot_product_attention", T(2, 2, 4, 8), T(2, 2, 4, 8), T(2, 2, 4, 6), is_causal=True)
case("Functional.scaled_dot_product_attention", T(2, 2, 3, 8), T(2, 2, 5, 8), T(2, 2, 5, 6), is_causal=True)  # L < S: top-left aligned
mask = [[True, False, True, True, False], [False, False, False, False, True], [True, True, True, True, True], [False, True, False, False, False]]
case("Functional.scaled_dot_product_attention", T(2, 2, 4, 8), T(2, 2, 5, 8), T(2, 2, 5, 6), attn_mask=V(mask, "bool"))
case("Functional.scaled_dot_product_attention", T(2, 2, 4, 8), T(2, 2, 5, 8), T(2, 2, 5, 6), T(4, 5), scale=0.3)  # additive mask

# --- shapes, indexing, data movement

case("Tensor.reshape", T(2, 3, 4), 6, -1)
case("Tensor.reshape", T(2, 3, 4), (4, 6))
case("Tensor.view", T(2, 3, 4), -1)
case("Tensor.view", I(2, 3, 4), 3, 2, 4)
each(["Torch.reshape", "Mint.reshape"], T(2, 3, 4), (3, -1))

case("Tensor.permute", T(2, 3, 4), 2, 0, 1)
case("Tensor.permute", T(2, 3, 4), (-1, 0, 1))
each(["Torch.permute", "Mint.permute"], T(2, 3, 4), (1, 0, 2))

each(["Torch.transpose", "Tensor.transpose", "Mint.transpose", "Torch.swapaxes"], T(2, 3, 4), 0, -1)
case("Tensor.transpose", T(2, 3, 4), -2, -1)
case("Torch.transpose", T(5), 0, -1)  # 1-D: unchanged
case("MS.Tensor.transpose", T(2, 3, 4), 2, 0, 1)
case("MS.Tensor.transpose", T(2, 3, 4))  # no axes: reversed

each(["Torch.unsqueeze", "Tensor.unsqueeze", "Mint.unsqueeze"], T(3, 4), 1)
case("Torch.unsqueeze", T(3, 4), -1)
case("Torch.unsqueeze", T(), 0)

each(["Torch.squeeze", "Tensor.squeeze", "Mint.squeeze"], T(3, 1, 4, 1))
case("Torch.squeeze", T(3, 1, 4, 1), 1)
case("Torch.squeeze", T(3, 1, 4, 1), -1)
case("Torch.squeeze", T(3, 1, 4, 1), 0)  # not of size 1: unchanged

case("Tensor.expand", T(3, 1), 2, 3, 4)
case("Tensor.expand", T(3, 1), (-1, 5))

each(["Torch.split", "Tensor.split", "Mint.split"], T(5, 4), 2)  # uneven: 2, 2, 1
case("Torch.split", T(5, 4), [1, 3], dim=1)  # a list of sizes
case("Tensor.split", T(5, 4), 3, -1)

each(["Torch.chunk", "Tensor.chunk", "Mint.chunk"], T(7, 2), 3)  # uneven: 3, 3, 1
case("Torch.chunk", T(6, 2), 4)  # only 3 chunks of 2
case("Tensor.chunk", T(3, 5), 2, dim=-1)

# List arguments: the runtime differentiates top-level tensors only, so
# these run forward only (their gradients are those of cat/stack's pieces).
each(["Torch.stack", "Mint.stack"], [T(3, 4), T(3, 4), T(3, 4)], 1)
case("Torch.stack", [T(3, 4), T(3, 4)], dim=-1)
case("Torch.stack", [T(3), I(3)])  # promotes to float64
each(["Torch.cat", "Mint.cat", "Torch.concat"], [T(2, 3), T(4, 3)])
case("Torch.cat", [T(2, 3), T(2, 1)], dim=-1)
case("Torch.cat", [I(2, 3), T(1, 3)])  # promotes to float64

each(["Torch.triu", "Tensor.triu", "Mint.triu"], T(4, 5))
case("Torch.triu", T(4, 5), 1)
case("Torch.triu", T(2, 3, 3), diagonal=-1)
each(["Torch.tril", "Tensor.tril", "Mint.tril"], T(4, 5))
case("Torch.tril", T(4, 5), -1)
case("Torch.tril", I(2, 3, 3), diagonal=1)

each(["Torch.masked_fill", "Tensor.masked_fill", "Mint.masked_fill"], T(3, 4), B(4), -1e9)  # mask broadcasts
case("Torch.masked_fill", T(3, 4), B(3, 4), -INF)
case("Torch.masked_fill", T(3, 4), B(3, 1), V(0.5))  # 0-d tensor value, differentiated
case("Torch.masked_fill", I(3, 4), B(3, 4), 2.7)  # int tensor: the value is truncated

each(["Torch.gather", "Tensor.gather", "Mint.gather"], T(3, 4), 1, I(3, 2, high=4))
case("Torch.gather", T(3, 4), -1, I(3, 6, high=4))
case("Torch.gather", T(3, 4), 0, I(2, 4, high=3))  # index smaller than the input
case("Torch.gather", T(3, 4, 2), 1, I(2, 3, 1, high=4))

case("MS.Functional.gather", T(5, 3), I(2, 2, high=5), 0)
case("MS.Functional.gather", T(2, 5, 3), I(4, high=5), 1)
case("MS.Functional.gather", T(2, 5, 3), I(2, 2, high=3), -1)

case("Tensor.__setitem__", T(3, 4), 1, 0.5)
case("Tensor.__setitem__", T(3, 4), -1, T(4))
case("Tensor.__setitem__", T(3, 4), (slice(None), slice(1, 3)), T(3, 2))
case("Tensor.__setitem__", T(3, 4), (slice(1, None), -1), T(2))
case("Tensor.__setitem__", T(2, 3, 4), (Ellipsis, 0), 2.0)
case("Tensor.__setitem__", T(3, 4), slice(-2, None), T(4))

each(["Tensor.contiguous", "Tensor.clone", "Torch.clone", "Mint.clone"], T(3, 4))
case("Torch.clone", I(3, 4))

each(["Torch.flatten", "Tensor.flatten", "Mint.flatten"], T(2, 3, 4))
case("Torch.flatten", T(2, 3, 4, 5), 1)
case("Torch.flatten", T(2, 3, 4, 5), 1, -2)
case("Torch.flatten", T())  # 0-d -> [1]

# --- factories and casts

each(["Torch.arange", "Mint.arange"], 5)
case("Torch.arange", 1, 10, 3)
case("Torch.arange", 10, 0, -3)
case("Torch.arange", 0, 2, 0.25)  # float arguments -> float32
case("Torch.arange", -1.0, 1.0, 0.1, dtype=torch.float64)
case("Mint.arange", 0, 6, 2, dtype=torch.int32)

each(["Torch.ones_like", "Mint.ones_like", "Torch.zeros_like", "Mint.zeros_like"], T(3, 4))
case("Torch.ones_like", T(3, 4), dtype=torch.int32)
case("Torch.zeros_like", I(3, 4))

each(["Torch.ones", "Mint.ones", "Torch.zeros", "Mint.zeros"], (2, 3))
case("Torch.ones", 2, 3, dtype=torch.int64)
case("Torch.zeros", 4, dtype=torch.float64)

case("Tensor.to", T(3, 4), torch.float32)
case("Tensor.to", T(3, 4, low=-5, high=5), torch.int64)  # truncates toward zero
case("Tensor.to", T(3, 4), dtype=torch.float16)
case("Tensor.to", T(3, 4), I(2, dtype="int32"))  # the other tensor's dtype
case("Tensor.to", T(3, 4), "cpu")
case("Tensor.to", T(3, 4), "cpu", torch.bfloat16)
case("Tensor.float", T(3, 4))
case("Tensor.half", V([[1e-6, -70000.0, 1.0 / 3.0], [65504.0, 2.5e-8, -0.1]]))  # subnormal, overflow, rounding
case("Tensor.bfloat16", T(3, 4, low=-1e5, high=1e5))
case("Tensor.double", T(3, 4))
case("Tensor.double", I(3, 4))
case("Tensor.long", T(3, 4, low=-5, high=5))
case("Tensor.int", T(3, 4, low=-5, high=5))
case("Tensor.bool", V([[0.0, -0.5, 2.0], [0.0, 1e-300, -0.0]]))
case("Tensor.bool", I(3, 4, low=-1, high=2))
case("Tensor.type_as", T(3, 4, low=-5, high=5), I(2, dtype="int32"))
case("Tensor.type_as", I(3, 4), T(2))
case("Tensor.type_as", T(3, 4), T(2))

# --- activations and elementwise math
ZERO_EDGE = V([[-1.5, 0.0, 2.0], [0.0, -0.25, 3.0]])  # gradients at exactly 0
each(["Functional.relu", "Torch.relu", "Tensor.relu", "Mint.relu", "MintFunctional.relu"], T(3, 4))
case("Functional.relu", ZERO_EDGE)
case("Torch.relu", I(3, 4, low=-3, high=3))
each(["Functional.leaky_relu", "MintFunctional.leaky_relu"], T(3, 4))
case("Functional.leaky_relu", ZERO_EDGE, 0.2)
each(["Functional.sigmoid", "Torch.sigmoid", "Tensor.sigmoid", "Mint.sigmoid", "MintFunctional.sigmoid"], T(3, 4))
case("Torch.sigmoid", V([[-800.0, -30.0, 0.0, 30.0, 800.0]]))  # stable at both ends
each(["Functional.tanh", "Torch.tanh", "Tensor.tanh", "Mint.tanh"], T(3, 4))
each(["Torch.exp", "Tensor.exp", "Mint.exp"], T(3, 4))
case("Torch.exp", I(3, 4))  # int -> float32
each(["Torch.log", "Tensor.log", "Mint.log"], T(3, 4, low=0.1, high=5.0))
case("Torch.log", V([[0.0, 1.0, -1.0]]))  # -inf and NaN where torch has them
each(["Torch.sin", "Tensor.sin", "Mint.sin"], T(3, 4))
each(["Torch.cos", "Tensor.cos", "Mint.cos"], T(3, 4))
each(["Torch.erf", "Tensor.erf", "Mint.erf"], T(3, 4))
each(["Torch.abs", "Tensor.abs", "Tensor.__abs__", "Mint.abs"], T(3, 4))
case("Torch.abs", ZERO_EDGE)
case("Torch.abs", I(3, 4, low=-3, high=3))
each(["Functional.rms_norm", "MintFunctional.rms_norm"], T(2, 3, 8), [8], T(8))
case("Functional.rms_norm", T(2, 3, 8), (3, 8), eps=1e-5)
each(["Torch.where", "Mint.where"], B(3, 4), T(3, 4), T(4))
case("Torch.where", B(3, 1), T(3, 4), 0.5)

# --- more reductions and indexing
each(["Torch.amax", "Tensor.amax", "Mint.amax"], T(3, 4, 5), 1)
case("Torch.amax", T(3, 4, 5), (0, 2), keepdim=True)
each(["Torch.amin", "Tensor.amin", "Mint.amin"], T(3, 4, 5), -1)
case("Torch.amin", T(3, 4))
# Ties: torch splits amax/amin gradients evenly between equal values.
case("Torch.amax", V([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, -1.0], [0.0, 0.0, 0.0, 0.0]]), 1)
case("Torch.amin", V([[1.0, 3.0, 3.0, 1.0], [0.0, 0.0, 5.0, 0.0]]))
each(["Torch.argmax", "Tensor.argmax", "Mint.argmax"], T(3, 4, 5), 1)
case("Torch.argmax", T(3, 4))
case("Torch.argmax", V([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]), 1, keepdim=True)  # ties: the first index
each(["Torch.argmin", "Tensor.argmin", "Mint.argmin"], T(3, 4, 5), -1)
each(["Torch.var", "Tensor.var"], T(3, 4, 5), 1)
case("Torch.var", T(3, 4), correction=0, keepdim=True)
each(["Torch.std", "Tensor.std"], T(3, 4, 5), (0, 2))
case("Torch.std", T(6))
each(["Torch.cumsum", "Tensor.cumsum", "Mint.cumsum"], T(3, 4), 1)
case("Torch.cumsum", I(5), 0)  # int -> int64
case("Torch.cumsum", T(3, 4), 0, dtype=torch.float16)
each(["Torch.index_select", "Tensor.index_select", "Mint.index_select"], T(5, 3), 0, V([4, 0, 2, 2], "int64"))
case("Torch.index_select", T(2, 5, 3), -2, V([1, 3], "int64"))

# --- convolutions (through candle's conv2d; padding explicit per side)
each(["Functional.conv1d", "Torch.conv1d", "MintFunctional.conv1d"], T(2, 4, 9), T(6, 4, 3), T(6))
case("Functional.conv1d", T(2, 4, 9), T(6, 2, 3), None, 2, 1, 2, 2)  # stride, padding, dilation, groups
case("Functional.conv1d", T(4, 9), T(3, 4, 3), padding="same")  # unbatched
each(["Functional.conv2d", "Torch.conv2d", "MintFunctional.conv2d"], T(2, 3, 7, 6), T(4, 3, 3, 3), T(4))
case("Functional.conv2d", T(2, 4, 8, 8), T(6, 2, 3, 3), None, 2, (1, 2), 1, 2)  # per-dim padding, groups
case("Functional.conv2d", T(3, 7, 7), T(2, 3, 3, 3), padding="same", dilation=2)

# --- pooling (gathered windows; -inf padding for max, zeros for avg)
each(["Functional.max_pool2d", "MintFunctional.max_pool2d"], T(2, 3, 8, 7), 2)
case("Functional.max_pool2d", T(2, 3, 9, 9), 3, 2, 1)  # kernel != stride, padding
case("Functional.max_pool2d", T(3, 8, 8), (2, 3), (1, 2), 0, 2)  # unbatched, dilation
# Ties (zeros after a ReLU, repeated values): the first maximum of each window takes the gradient.
case("Functional.max_pool2d", V([[[[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.5], [2.0, 2.0, 0.0, 0.0], [2.0, 2.0, 0.0, 0.0]]]]), 2)
case("Functional.max_pool2d", V([[[[0.0, 0.0, 0.0], [0.0, 3.0, 3.0], [0.0, 3.0, 0.0]]]]), 2, 1)  # overlapping windows
each(["Functional.avg_pool2d", "MintFunctional.avg_pool2d"], T(2, 3, 8, 7), 2)
case("Functional.avg_pool2d", T(2, 3, 9, 9), 3, 2, 1)  # count_include_pad=True
case("Functional.avg_pool2d", T(2, 3, 9, 9), 3, 2, 1, count_include_pad=False)
case("Functional.avg_pool2d", T(3, 8, 8), (2, 4), divisor_override=5)

# --- BLAS-style products (zoo)
SPECIAL.update({
    "MS.Functional.mm": torch.mm,
    "MS.Functional.bmm": torch.bmm,
    "MS.Functional.addmm": torch.addmm,
    # mindspore.ops.baddbmm(input, batch1, batch2, beta=1, alpha=1): positional beta and alpha.
    "MS.Functional.baddbmm": lambda input, b1, b2, beta=1, alpha=1: torch.baddbmm(input, b1, b2, beta=beta, alpha=alpha),
})
each(["Torch.mm", "Tensor.mm", "Mint.mm", "MS.Functional.mm"], T(3, 4), T(4, 5))
each(["Torch.bmm", "Tensor.bmm", "Mint.bmm", "MS.Functional.bmm"], T(2, 3, 4), T(2, 4, 5))
each(["Torch.addmm", "Tensor.addmm", "Mint.addmm", "MS.Functional.addmm"], T(5), T(3, 4), T(4, 5))
case("Torch.addmm", T(3, 5), T(3, 4), T(4, 5), beta=0.5, alpha=2.0)
case("Torch.addmm", V([[float("nan")] * 5] * 3), T(3, 4), T(4, 5), beta=0)  # beta=0 ignores input, NaN included
each(["Torch.baddbmm", "Tensor.baddbmm", "Mint.baddbmm", "MS.Functional.baddbmm"], T(2, 3, 5), T(2, 3, 4), T(2, 4, 5))
case("Torch.baddbmm", T(1, 3, 5), T(2, 3, 4), T(2, 4, 5), beta=-1.0, alpha=0.25)
case("MS.Functional.baddbmm", T(2, 3, 5), T(2, 3, 4), T(2, 4, 5), 2.0, 0.5)
