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
    "Torch.vecdot": torch.linalg.vecdot,
    "Torch.multi_dot": torch.linalg.multi_dot,
    "Torch.inv": torch.linalg.inv,
    "Torch.inv_ex": torch.linalg.inv_ex,
    "Torch.solve_ex": torch.linalg.solve_ex,
    "Torch.cholesky_ex": torch.linalg.cholesky_ex,
    "Torch.svdvals": torch.linalg.svdvals,
    "Torch.matrix_norm": torch.linalg.matrix_norm,
    "Torch.cond": torch.linalg.cond,
    "Torch.matrix_rank": torch.linalg.matrix_rank,
    "Torch.tensorsolve": torch.linalg.tensorsolve,
    "Torch.householder_product": torch.linalg.householder_product,
    "Torch.lu_factor": torch.linalg.lu_factor,
    "Torch.lu_factor_ex": torch.linalg.lu_factor_ex,
    "Torch.lu": torch.linalg.lu,
    "Torch.gelu": F.gelu,
    "Torch.silu": F.silu,
    "Mint.gelu": F.gelu,
    "Mint.silu": F.silu,
    "MintFunctional.dense": F.linear,
    # mindspore.ops' and Tensor's unbind/split family and einsum: torch's (axis for dim).
    "MS.Functional.unbind": torch.unbind,
    "MS.Tensor.unbind": torch.unbind,
    "MS.Functional.tensor_split": torch.tensor_split,
    "MS.Tensor.tensor_split": torch.tensor_split,
    "MS.Functional.chunk": torch.chunk,
    "MS.Functional.split": torch.split,
    "MS.Functional.einsum": torch.einsum,
    "MS.Functional.softmin": lambda x, axis=-1, dtype=None: F.softmin(x, dim=axis, dtype=dtype),
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
    Functional.X / MintFunctional.X -> torch.nn.functional.X, VF.X -> torch._VF.X."""
    if name in SPECIAL:
        return SPECIAL[name]
    prefix, op = name.split(".")
    if prefix == "Tensor":
        method = getattr(torch.Tensor, op)
        if is_inplace(name):
            return lambda x, *args, **kwargs: method(x.clone(), *args, **kwargs)
        return method
    module = {"Torch": torch, "Mint": torch, "Functional": F, "MintFunctional": F, "VF": torch._VF}[prefix]
    return getattr(module, op)


# ---------------------------------------------------------------- cases


class Case:
    """One call to replay: the op-table name (with "MS." for
    MindSpore-specific meanings), the arguments, and the torch reference."""

    def __init__(self, name, args, kwargs, reference=None):
        self.name = name
        self.args = args
        self.kwargs = kwargs
        self.reference = reference or default_reference(name)
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


class DerivedCase(Case):
    """A case of a name the runtime derives by rule (runtime/src/ops/derive.rs)
    from a base entry: one of the base's cases, called in torch under the
    derived name (its own function: `torch.Tensor.masked_fill_`,
    `Tensor.__and__`), so that torch, not the rule, says what it computes.
    In-place forms run on a copy of `self`, differentiated through it."""

    def __init__(self, derivation, base):
        name = derivation["name"]
        if derivation["framework"] == "mindspore" and name.split(".")[0] in ("Functional", "Tensor"):
            # MindSpore's own function, which MindSpore spells as torch does:
            # MindSpore itself is the reference (ms_bridge.py).
            from ms_bridge import ms_kwargs, ms_reference, signature_differs

            aliases = derivation["keyword_aliases"]
            differs = signature_differs(name, derivation["sig"], aliases)
            if differs:
                raise TypeError(f"signature: {differs}")
            reference, kwargs = ms_reference(name), ms_kwargs(name, base.kwargs, aliases)
        else:
            reference, kwargs = None, base.kwargs
        super().__init__(name, base.args, kwargs, reference)
        self.derived_framework = derivation["framework"]
        self.reference_framework = "torch" if reference is None else "mindspore"
        self.constants = set(base.constants)
        # A base case run forward only stays so under every spelling.
        self.backward = self.backward and base.backward
        if derivation["in_place"]:
            method = self.reference
            self.reference = lambda x, *args, **kwargs: method(x.clone(), *args, **kwargs)
            self.bench = bench_reference(self.name, self.reference)
            # Differentiated through the clone: the in-place form's gradients,
            # where the runtime's entry has a backward (an in-place comparison's
            # float result has zero gradients in torch, and none in the table).
            self.backward = base.backward and derivation["backward"]

    @property
    def framework(self):
        return self.derived_framework


def ms_case(name, *args, **kwargs):
    """Adds the call `name(*args, **kwargs)` of a MindSpore-only table name
    ("MS.Functional.var") with MindSpore itself as the reference (ms_bridge.py)."""
    from ms_bridge import ms_reference

    c = Case(name, args, kwargs, ms_reference(name.removeprefix("MS.")))
    c.reference_framework = "mindspore"
    CASES.append(c)
    return c


def derived_cases(derivations):
    """The cases of the derived names (runtime/tests/agreement.rs writes
    them as [{name, framework, base, in_place, backward, sig, keyword_aliases}]): every case of the
    base; and the names whose MindSpore signature is not their base's
    ([{name, error}])."""
    cases, refused = [], []
    for d in derivations:
        for c in CASES:
            if c.name == d["base"]:
                try:
                    cases.append(DerivedCase(d, c))
                except AttributeError:  # no such function: the name stays without a case
                    pass
                except TypeError as e:
                    refused.append({"name": d["name"], "error": str(e)})
                    break
    return cases, refused


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

# List arguments: each float tensor of the list is differentiated, and its
# gradient compared (one per tensor, in order, as torch.autograd.grad gives).
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
case("Tensor.to", V([[-INF, 1.5], [-2.5, 3.0]]), torch.int64)  # -inf: int64's minimum (t5's masks); +inf and NaN are undefined in torch
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
case("Tensor.addmm", T(3, 5), T(3, 4), T(4, 5), alpha=-1.0)  # self of the result's shape: addmm_ too
case("Torch.addmm", V([[float("nan")] * 5] * 3), T(3, 4), T(4, 5), beta=0)  # beta=0 ignores input, NaN included
each(["Torch.baddbmm", "Tensor.baddbmm", "Mint.baddbmm", "MS.Functional.baddbmm"], T(2, 3, 5), T(2, 3, 4), T(2, 4, 5))
case("Torch.baddbmm", T(1, 3, 5), T(2, 3, 4), T(2, 4, 5), beta=-1.0, alpha=0.25)
case("MS.Functional.baddbmm", T(2, 3, 5), T(2, 3, 4), T(2, 4, 5), 2.0, 0.5)

# --- norms, losses, pooling, conv (zoo)


def _ms_conv2d(input, weight, bias=None, stride=1, pad_mode="valid", padding=0, dilation=1, groups=1):
    """mindspore.ops.conv2d: pad_mode 'valid', 'same' (ceil(in / stride)
    outputs, the odd padding at the bottom and right) or 'pad'."""
    pair = lambda v: tuple(v) if isinstance(v, (list, tuple)) else (v, v)
    (sh, sw), (dh, dw), (ph, pw) = pair(stride), pair(dilation), pair(padding)
    if pad_mode == "same":
        pads = []
        for n, k, s, d in zip(input.shape[-2:], weight.shape[-2:], (sh, sw), (dh, dw)):
            total = max((-(-n // s) - 1) * s + d * (k - 1) + 1 - n, 0)
            pads.append((total // 2, total - total // 2))
        (top, bottom), (left, right) = pads
    else:
        top, bottom, left, right = (ph, ph, pw, pw) if pad_mode == "pad" else (0, 0, 0, 0)
    x = F.pad(input, (left, right, top, bottom))
    return F.conv2d(x, weight, bias, (sh, sw), 0, (dh, dw), groups)


def _ms_nll_loss(inputs, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """mindspore.ops.nll_loss: torch's nll_loss mixed, by label_smoothing,
    with cross_entropy's smoothing term on the given log-probabilities
    (checked against MindSpore 2.10)."""
    target = target.long()
    nll = F.nll_loss(inputs, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0:
        return nll
    c = inputs.shape[1] if inputs.dim() > 1 else inputs.shape[0]
    w = weight if weight is not None else torch.ones(c, dtype=inputs.dtype)
    shape = [1] * inputs.dim()
    shape[1 if inputs.dim() > 1 else 0] = c
    keep = target != ignore_index
    smooth = -(inputs * w.view(shape)).sum(1 if inputs.dim() > 1 else 0) * keep
    if reduction == "none":
        s = smooth
    elif reduction == "sum":
        s = smooth.sum()
    else:
        s = smooth.sum() / (w[target.clamp(min=0)] * keep).sum()
    return (1 - label_smoothing) * nll + s * label_smoothing / c


def _long_target(f):
    """A class-index loss taking MindSpore's Int32 labels (torch needs int64)."""
    return lambda input, target, *args, **kwargs: f(input, target.long() if not target.is_floating_point() else target, *args, **kwargs)


def _ms_cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """mindspore.ops.cross_entropy / mint's: torch's without size_average/reduce."""
    return _long_target(F.cross_entropy)(input, target, weight, ignore_index=ignore_index, reduction=reduction, label_smoothing=label_smoothing)


def _ms_l1_loss(input, target, reduction="mean"):
    return F.l1_loss(input, target, reduction=reduction)


def _ms_mse_loss(input, target, reduction="mean"):
    return F.mse_loss(input, target, reduction=reduction)


SPECIAL.update({
    "MS.Functional.conv2d": _ms_conv2d,
    "MS.Functional.dense": F.linear,
    "MS.Functional.cross_entropy": _ms_cross_entropy,
    "MintFunctional.cross_entropy": _ms_cross_entropy,
    "MS.Functional.nll_loss": _ms_nll_loss,
    "MS.Functional.l1_loss": _ms_l1_loss,
    "MintFunctional.l1_loss": _ms_l1_loss,
    "MS.Functional.mse_loss": _ms_mse_loss,
    "MintFunctional.mse_loss": _ms_mse_loss,
    # mindspore.ops.smooth_l1_loss(input, target, beta=1.0, reduction='none').
    "MS.Functional.smooth_l1_loss": lambda input, target, beta=1.0, reduction="none": F.smooth_l1_loss(input, target, reduction=reduction, beta=beta),
    "MS.Functional.kl_div": lambda logits, labels, reduction="mean": F.kl_div(logits, labels, reduction=reduction),
    "MS.Functional.binary_cross_entropy": lambda logits, labels, weight=None, reduction="mean": F.binary_cross_entropy(logits, labels, weight, reduction=reduction),
    "MintFunctional.binary_cross_entropy": lambda input, target, weight=None, reduction="mean": F.binary_cross_entropy(input, target, weight, reduction=reduction),
    "MS.Functional.binary_cross_entropy_with_logits": lambda input, target, weight=None, pos_weight=None, reduction="mean": F.binary_cross_entropy_with_logits(
        input, target, weight, reduction=reduction, pos_weight=pos_weight
    ),
    "MintFunctional.binary_cross_entropy_with_logits": lambda input, target, weight=None, reduction="mean", pos_weight=None: F.binary_cross_entropy_with_logits(
        input, target, weight, reduction=reduction, pos_weight=pos_weight
    ),
})

# batch_norm: torch refuses gradients for the running statistics (MindSpore
# records None for them): they stay constants. Training uses the batch's
# statistics (the running ones are updated in place, not returned).
for _name in ["Functional.batch_norm", "MintFunctional.batch_norm"]:
    case(_name, T(4, 3, 5, 5), T(3), T(3, low=0.5), T(3), T(3), True).constant(1, 2)
case("Functional.batch_norm", T(4, 3, 5), T(3), T(3, low=0.5), T(3), T(3), False, 0.1, 1e-3).constant(1, 2)  # evaluation: running statistics
case("Functional.batch_norm", T(6, 4), None, None, training=True)  # [N, C], no running statistics, no affine
case("Functional.batch_norm", T(2, 3, 4, 4), T(3), T(3, low=0.5), weight=T(3), training=True, momentum=0.1, eps=1e-5).constant(1, 2)  # MindSpore's call
each(["Functional.group_norm", "MintFunctional.group_norm", "Torch.group_norm"], T(2, 4, 3, 3), 2, T(4), T(4))
case("Functional.group_norm", T(2, 6, 5), 3)  # no affine
case("Functional.group_norm", T(3, 4, 2, 2, 2), 4, weight=T(4), eps=1e-3)  # one channel per group, 3-D

# Class-index losses. nll_loss defines no gradient for `weight`.
case("Functional.nll_loss", T(4, 5), V([1, 0, 4, 2], "int64"))
case("Functional.nll_loss", T(4, 5), V([1, -100, 4, 2], "int64"), reduction="sum")  # default ignore_index
case("Functional.nll_loss", T(4, 5), V([1, 3, 4, 3], "int64"), T(5, low=0.1), ignore_index=3).constant(2)  # weighted mean
case("Functional.nll_loss", T(4, 5), V([1, 3, 4, 0], "int64"), weight=T(5, low=0.1), reduction="none").constant("weight")
case("Functional.nll_loss", T(2, 5, 3), V([[1, 4, 0], [2, 2, -100]], "int64"))  # [N, C, d]
case("Functional.nll_loss", T(5), V(2, "int64"))  # unbatched
case("Functional.nll_loss", T(4, 5), V([1, 0, 4, 2], "int64"), size_average=False)  # legacy: sum
case("Functional.cross_entropy", T(2, 5, 3, 2), I(2, 3, 2, high=5), label_smoothing=0.1)  # [N, C, d1, d2]
case("Functional.cross_entropy", T(2, 5, 3), T(2, 5, 3, low=0.0, high=1.0), reduction="sum")  # [N, C, d] probabilities
case("Functional.cross_entropy", T(4, 5), V([1, -100, -100, -100], "int64"), reduce=False)  # legacy: none
case("Functional.cross_entropy", T(3, 4), V([-100, -100, -100], "int64"), label_smoothing=0.2)  # all ignored: NaN, zero gradients
case("Functional.nll_loss", T(3, 4), V([-100, -100, -100], "int64"))
case("Functional.cross_entropy", T(3, 4), V([1, 2, 0], "int64"), V([0.0, 0.0, 0.0, 1.0])).constant(2)  # zero total weight: NaN gradients
# MindSpore: Int32 labels, ignore_index and label_smoothing in the 4th/6th place (no size_average/reduce).
each(["MS.Functional.cross_entropy", "MintFunctional.cross_entropy"], T(6, 7), V([1, -100, 6, 2, 0, -100], "int32"), None, -100, "mean", 0.05)
case("MS.Functional.cross_entropy", T(4, 5), V([1, 3, 4, 3], "int32"), T(5, low=0.1), 3, "sum").constant(2)
case("MS.Functional.nll_loss", T(2, 3), V([2, -100], "int32"), ignore_index=-100)
case("MS.Functional.nll_loss", T(4, 5), V([1, 3, 4, 3], "int32"), T(5, low=0.1), 3, "mean", 0.2).constant(2)  # label smoothing, weights
case("MS.Functional.nll_loss", T(2, 5, 3), V([[1, 4, 0], [2, 2, -100]], "int32"), label_smoothing=0.1, reduction="none")

# Elementwise losses.
_D0 = V([[0.5, -1.0, 2.0], [0.0, 3.0, -0.5]])  # input == target here: gradients at d = 0
each(["Functional.l1_loss", "MS.Functional.l1_loss", "MintFunctional.l1_loss"], T(3, 4), T(3, 4))
case("Functional.l1_loss", _D0, V([[0.5, 0.0, 2.0], [0.0, 1.0, -0.5]]), reduction="none")
case("Functional.l1_loss", T(3, 4), T(4), reduction="sum")  # the target broadcasts
case("Functional.l1_loss", T(3, 4), T(3, 4), weight=T(3, 4, low=0.1))  # weighted mean, weight differentiated
case("MS.Functional.l1_loss", T(3, 4), T(3, 4), "sum")
case("MintFunctional.l1_loss", T(3, 4), T(3, 4), "none")
each(["Functional.mse_loss", "MS.Functional.mse_loss", "MintFunctional.mse_loss"], T(2, 3, 4), T(2, 3, 4))
case("Functional.mse_loss", T(3, 4), T(3, 4), reduction="sum", weight=T(3, 4, low=0.1))
case("Functional.mse_loss", T(3, 4), T(3, 4), None, False)  # legacy reduce=False: none
case("MS.Functional.mse_loss", T(3, 4), T(3, 4), "none")
case("MintFunctional.mse_loss", T(3, 4), T(3, 4), "sum")
case("Functional.smooth_l1_loss", T(3, 4), T(3, 4))
case("Functional.smooth_l1_loss", V([[0.0, 0.5, -0.5, 0.2, 3.0]]), V([[0.0, 0.0, 0.0, 0.0, 0.0]]), reduction="none", beta=0.5)  # d = 0 and |d| = beta
case("Functional.smooth_l1_loss", T(3, 4), T(3, 4), beta=0.0, reduction="sum")  # L1
case("MS.Functional.smooth_l1_loss", T(3, 4), T(3, 4))  # MindSpore's default reduction: none
case("MS.Functional.smooth_l1_loss", T(3, 4), T(3, 4), 0.5, "mean")
case("MS.Functional.smooth_l1_loss", T(3, 4), T(3, 4), beta=0.3, reduction="sum")
case("Functional.kl_div", T(3, 4, low=-3.0, high=0.0), T(3, 4, low=0.05, high=1.0))  # mean over elements
case("Functional.kl_div", T(3, 4, low=-3.0, high=0.0), T(3, 4, low=0.05, high=1.0), reduction="batchmean")
case("Functional.kl_div", T(2, 3, 4), T(2, 3, 4, low=-3.0, high=0.0), reduction="sum", log_target=True)
case("Functional.kl_div", T(2, 3), V([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]]), reduction="none").constant(1)  # 0·log 0 = 0 (torch's target gradient is NaN there)
case("Functional.kl_div", T(), T(low=0.1, high=1.0), reduction="batchmean")  # 0-d: the sum
case("MS.Functional.kl_div", T(2, 3, low=-3.0, high=0.0), T(2, 3, low=0.05, high=1.0), reduction="batchmean")
case("MS.Functional.kl_div", T(2, 3, low=-3.0, high=0.0), T(2, 3, low=0.05, high=1.0), "sum")
each(["Functional.binary_cross_entropy", "MintFunctional.binary_cross_entropy"], T(3, 4, low=0.05, high=0.95), T(3, 4, low=0.0, high=1.0))
case("Functional.binary_cross_entropy", T(3, 4, low=0.05, high=0.95), T(3, 4, low=0.0, high=1.0), T(4, low=0.1), reduction="sum").constant(2)  # weight broadcasts
case("Functional.binary_cross_entropy", V([0.0, 1.0, 0.5, 1e-50, 0.999]), V([0.3, 0.3, 0.3, 1.0, 0.0]), reduction="none").constant(1)  # clamped logs; torch's finite input gradient
case("MS.Functional.binary_cross_entropy", T(2, 3, low=0.05, high=0.95), T(2, 3, low=0.0, high=1.0), T(2, 3, low=0.1), "none").constant(2)
case("MS.Functional.binary_cross_entropy", logits=T(2, 3, low=0.05, high=0.95), labels=T(2, 3, low=0.0, high=1.0))
case("MintFunctional.binary_cross_entropy", T(2, 3, low=0.05, high=0.95), T(2, 3, low=0.0, high=1.0), None, "sum")
each(["Functional.binary_cross_entropy_with_logits", "MintFunctional.binary_cross_entropy_with_logits"], T(3, 4, low=-4.0, high=4.0), T(3, 4, low=0.0, high=1.0))
case("Functional.binary_cross_entropy_with_logits", T(2, 3), T(2, 3, low=0.0, high=1.0), pos_weight=T(3, low=0.5, high=2.0)).constant("pos_weight")
case("Functional.binary_cross_entropy_with_logits", V([[0.0, -50.0, 50.0, -800.0, 800.0]]), V([[0.5, 1.0, 0.0, 0.3, 0.7]]), T(1, 5, low=0.1), reduction="none").constant(2)  # 0 and saturated logits
case("MS.Functional.binary_cross_entropy_with_logits", T(2, 2), T(2, 2, low=0.0, high=1.0), T(2, 2, low=0.5), T(2, low=0.5)).constant(2, 3)  # the zoo's call
case("MS.Functional.binary_cross_entropy_with_logits", T(2, 3), T(2, 3, low=0.0, high=1.0), None, None, "sum")
case("MintFunctional.binary_cross_entropy_with_logits", T(2, 3), T(2, 3, low=0.0, high=1.0), None, "none", T(3, low=0.5)).constant(4)

# Adaptive average pooling: window i covers [floor(i*L/out), ceil((i+1)*L/out)).
each(["Functional.adaptive_avg_pool2d", "MintFunctional.adaptive_avg_pool2d"], T(2, 3, 5, 7), (2, 3))
case("Functional.adaptive_avg_pool2d", T(2, 3, 5, 7), 1)
case("Functional.adaptive_avg_pool2d", T(2, 3, 5, 7), (None, 3))  # None keeps the dim
case("Functional.adaptive_avg_pool2d", T(3, 5, 4), (8, 3))  # unbatched; more outputs than inputs: overlapping windows
case("Functional.adaptive_avg_pool2d", T(2, 16, 2, 2), [1, 1])
each(["Functional.adaptive_avg_pool1d", "Torch.adaptive_avg_pool1d", "MintFunctional.adaptive_avg_pool1d"], T(2, 3, 7), 3)
case("Functional.adaptive_avg_pool1d", T(3, 5), 5)

# Interpolation: torch's source indices (float32 for nearest modes) and linear weights.
each(["Functional.interpolate", "MintFunctional.interpolate"], T(2, 3, 4, 4), scale_factor=2.0)  # nearest
case("Functional.interpolate", T(2, 3, 5, 7), size=(8, 11))  # nearest, non-integer ratios
case("Functional.interpolate", T(2, 3, 5, 7), size=(3, 4))  # nearest downsampling
case("Functional.interpolate", T(2, 3, 5, 7), scale_factor=1.7)  # the kernel uses 1/1.7
case("Functional.interpolate", T(2, 3, 5, 7), scale_factor=1.7, recompute_scale_factor=True)  # the kernel uses in/out
case("Functional.interpolate", T(2, 3, 5, 7), size=(8, 11), mode="nearest-exact")
case("Functional.interpolate", T(2, 3, 4, 4), size=[8, 8], mode="bilinear", align_corners=False)  # the zoo's call
case("Functional.interpolate", T(2, 3, 5, 7), size=(8, 11), mode="bilinear", align_corners=True)
case("Functional.interpolate", T(2, 3, 5, 7), size=(3, 4), mode="bilinear")  # downsampling; align_corners defaults to False
case("Functional.interpolate", T(2, 3, 5, 7), scale_factor=(1.5, 0.6), mode="bilinear")
case("Functional.interpolate", T(2, 3, 5, 7), size=(1, 4), mode="bilinear", align_corners=True)  # one output row
case("Functional.interpolate", T(2, 3, 7), size=12, mode="linear")
case("Functional.interpolate", T(1, 2, 3, 4, 5), scale_factor=2, mode="trilinear", align_corners=True)
case("Functional.interpolate", T(2, 3, 7), scale_factor=3)  # nearest 1-D
case("Functional.interpolate", T(2, 3, 5, 7), size=(2, 3), mode="area")
case("MintFunctional.interpolate", T(2, 3, 4, 4), None, 2.0, "nearest")  # positional

# Convolutions. candle's conv2d gradient needs the input cut to the extent
# the kernel reaches when height and width leave different remainders.
case("Functional.conv2d", T(2, 3, 7, 6), T(4, 3, 3, 3), T(4), 2)
case("Functional.conv2d", T(2, 3, 6, 9), T(4, 3, 2, 3), None, 3, 1)
# mindspore.ops.conv2d: pad_mode 'valid' / 'same' (any stride) / 'pad'.
case("MS.Functional.conv2d", T(4, 3, 12, 12), T(6, 3, 3, 3), T(6), stride=1, pad_mode="pad", padding=1)  # the zoo's call
case("MS.Functional.conv2d", T(2, 3, 9, 8), T(4, 3, 3, 3), None, 2, "pad", (1, 2))  # positional, per-dim padding
case("MS.Functional.conv2d", T(2, 3, 7, 6), T(4, 3, 3, 2))  # valid (the default)
case("MS.Functional.conv2d", T(2, 3, 7, 8), T(4, 3, 3, 2), pad_mode="same")
case("MS.Functional.conv2d", T(1, 4, 7, 6), T(4, 2, 3, 3), None, 2, "same", 0, 1, 2)  # stride 2: uneven padding, groups
case("MS.Functional.conv2d", T(2, 2, 9, 9), T(3, 2, 3, 3), None, 1, "same", 0, 2)  # dilation
case("MS.Functional.dense", T(4, 8), T(16, 8), T(16))
case("MS.Functional.dense", T(2, 3, 8), T(5, 8))
each(["Functional.conv_transpose2d", "Torch.conv_transpose2d", "MintFunctional.conv_transpose2d"], T(2, 4, 5, 6), T(4, 3, 3, 3), T(3))
case("Functional.conv_transpose2d", T(2, 4, 5, 6), T(4, 3, 3, 3), None, 2, 1, 1)  # stride, padding, output_padding
case("Functional.conv_transpose2d", T(2, 4, 4, 5), T(4, 2, 3, 2), T(4), (2, 3), (0, 1), (1, 2), 2, 1)  # per-dim, groups
case("Functional.conv_transpose2d", T(1, 2, 6, 6), T(2, 2, 3, 3), stride=2, padding=3)  # padding beyond the kernel: cropped
case("Functional.conv_transpose2d", T(4, 5, 5), T(4, 2, 3, 3), dilation=2, padding=1)  # unbatched, dilation
each(["Functional.conv_transpose1d", "Torch.conv_transpose1d"], T(2, 4, 7), T(4, 3, 3), T(3), 2)
case("Functional.conv_transpose1d", T(4, 7), T(4, 1, 4), None, 3, 2, 1, 2, 1)  # unbatched, groups

# --- elementwise, logic, indexing, shape (zoo)
import random as _random


def _ms_hardswish(x):
    """MindSpore's hardswish: torch's values; at exactly -3 and 3 the
    gradient of the middle piece ((2x + 3)/6: -0.5 and 1.5), where torch's
    is 0 and 1 (measured on MindSpore 2.10's CPU kernels)."""
    return torch.where(x < -3, x * 0, torch.where(x > 3, x * 6 / 6, x * (x + 3) / 6))


def _ms_relu6(x):
    """MindSpore's relu6: the gradient is 1 on (0, 6], torch's on (0, 6)."""
    return torch.where(x <= 0, torch.zeros_like(x), torch.where(x > 6, torch.full_like(x, 6), x))


def _ms_topk(input, k, dim=None, largest=True, sorted=True):
    """mindspore.ops.topk: int32 indices, the last dim by default (the
    cases have no ties: MindSpore orders tied elements its own way, which
    the runtime's unit tests check against values measured on MindSpore)."""
    values, indices = torch.topk(input, k, -1 if dim is None else dim, largest, sorted)
    return values, indices.to(torch.int32)


def _ms_one_hot(indices, depth, on_value=1, off_value=0, axis=-1):
    """mindspore.ops.one_hot: on_value / off_value (in on_value's dtype)
    with the classes along `axis`. MindSpore's OneHot gradient is zero for
    on_value and off_value: they enter as constants, and `0·(on + off)`
    keeps the result differentiable with that zero gradient."""
    hot = F.one_hot(indices.long(), depth).bool()
    on = on_value if isinstance(on_value, torch.Tensor) else torch.tensor(on_value)
    off = off_value if isinstance(off_value, torch.Tensor) else torch.tensor(off_value)
    out = torch.where(hot, on.detach(), off.detach().to(on.dtype)).movedim(-1, axis)
    return out + 0 * (on + off) if on.is_floating_point() else out


def _ms_tensor_scatter_elements(input_x, indices, updates, axis=0, reduction="none"):
    """mindspore.ops.tensor_scatter_elements: scatter ('none') or scatter_add ('add')."""
    f = torch.scatter_add if reduction == "add" else torch.scatter
    return f(input_x, axis, indices.long(), updates)


def _ms_index_add(x, indices, y, axis, use_lock=True, check_index_bound=True):
    """mindspore.ops.index_add: torch.index_add with MindSpore's argument order."""
    return torch.index_add(x, axis, indices.long(), y)


def _ms_repeat_interleave(input, repeats, axis=None):
    """mindspore.ops.repeat_interleave: `axis` for torch's `dim`."""
    return torch.repeat_interleave(input, repeats, dim=axis)


def _ms_arange(start=0, end=None, step=1, dtype=None):
    """mindspore.ops.arange: `arange(n)` counts from 0."""
    return torch.arange(0, start, step, dtype=dtype) if end is None else torch.arange(start, end, step, dtype=dtype)


def _ms_assign(variable, value):
    """mindspore.ops.assign: the variable's new contents."""
    return value.to(variable.dtype).expand_as(variable).clone()


def _ms_clip_by_global_norm(x, clip_norm=1.0, use_norm=None):
    """mindspore.ops.clip_by_global_norm: x·clip_norm / max(‖x‖, clip_norm)
    over all tensors (the bench keeps MindSpore's float32 casts in float64);
    a 0-d tensor comes out of shape [1], as `x * Tensor([clip_norm])` does."""
    norm = torch.sqrt(sum((t * t).sum() for t in x))
    clip = torch.tensor([clip_norm], dtype=norm.dtype)
    g = torch.where(norm.detach() >= clip, norm, clip)
    return tuple(t * clip / g for t in x)


def _ms_sum(x, axis=None, dtype=None, keepdims=False, initial=None, keepdim=None):
    """mindspore.Tensor.sum(axis, dtype, keepdims, initial), or torch-style
    with a bool second (keepdim)."""
    if isinstance(dtype, bool):
        keepdims, dtype = dtype, None
    keep = keepdims or bool(keepdim)
    out = x.sum(dtype=dtype) if axis is None else x.sum(axis, keepdim=keep, dtype=dtype)
    if axis is None and keep:
        out = out.reshape([1] * x.dim())
    return out if initial is None else out + initial


def _ms_var(x, axis=None, ddof=0, keepdims=False, correction=None, keepdim=None):
    """mindspore.Tensor.var: ddof 0 by default; with torch's keywords, torch's default (1)."""
    if correction is not None or keepdim is not None:
        ddof, keepdims = (1 if correction is None else correction), bool(keepdim)
    return torch.var(x, axis, correction=ddof, keepdim=keepdims)


def _ms_std(x, axis=None, ddof=0, keepdims=False, correction=None, keepdim=None):
    """mindspore.Tensor.std: the square root of _ms_var."""
    return torch.sqrt(_ms_var(x, axis, ddof, keepdims, correction, keepdim))


SPECIAL.update({
    "MS.Functional.matmul": torch.matmul,
    "MS.Functional.sin": torch.sin,
    "MS.Functional.sqrt": torch.sqrt,
    "MS.Functional.rsqrt": torch.rsqrt,
    "MS.Functional.hardswish": _ms_hardswish,
    "MintFunctional.hardswish": _ms_hardswish,
    "MS.Functional.relu6": _ms_relu6,
    "MS.Functional.where": torch.where,
    "MS.Functional.tril": torch.tril,
    "MS.Functional.topk": _ms_topk,
    "MS.Functional.one_hot": _ms_one_hot,
    "MS.Functional.tensor_scatter_elements": _ms_tensor_scatter_elements,
    "MS.Functional.index_add": _ms_index_add,
    "MS.Functional.repeat_interleave": _ms_repeat_interleave,
    "MS.Functional.outer": torch.outer,
    "MS.Functional.arange": _ms_arange,
    "MS.Functional.stack": torch.stack,
    "MS.Functional.cat": torch.cat,
    "MS.Functional.assign": _ms_assign,
    "MS.Functional.clip_by_global_norm": _ms_clip_by_global_norm,
    "MS.Tensor.sum": _ms_sum,
    "MS.Tensor.var": _ms_var,
    "MS.Tensor.std": _ms_std,
    "Torch.empty": torch.empty,
})


def undefined_values(name, *args, **kwargs):
    """A call whose values are undefined (uninitialized memory): only the
    outputs' shapes and dtypes are checked."""
    c = case(name, *args, **kwargs)
    c.values_undefined = True
    return c


def inplace_backward(name, *args, **kwargs):
    """An in-place call whose backward torch defines (on a non-leaf) and the runtime replays."""
    c = case(name, *args, **kwargs)
    c.backward = True
    return c


def _ties(rows, n, levels, seed):
    """Float rows drawn from a few levels: many ties."""
    rng = _random.Random(seed)
    return V([[float(rng.randrange(levels)) for _ in range(n)] for _ in range(rows)])


HARD_EDGES = V([[-4.0, -3.0, -1.5, 0.0, 3.0, 4.0], [-0.5, 2.5, -3.0, 3.0, 1.0, -2.0]])  # the breakpoints exactly
NAN_INF = V([[math.nan, 1.0, -INF, INF, 0.0, -0.0]])

# Activations. Their breakpoints take torch's (MindSpore's) one-sided derivative.
case("Functional.hardswish", T(3, 4, low=-5, high=5))
case("Functional.hardswish", HARD_EDGES)
case("Functional.hardswish", V([[-INF, INF, 1e300, -1e300]]))  # x·0 is NaN at -inf, as in torch
each(["MS.Functional.hardswish", "MintFunctional.hardswish"], T(3, 4, low=-5, high=5))
case("MS.Functional.hardswish", HARD_EDGES)
case("MintFunctional.hardswish", HARD_EDGES)
each(["Functional.hardsigmoid", "MintFunctional.hardsigmoid"], T(3, 4, low=-5, high=5))
case("Functional.hardsigmoid", HARD_EDGES)
case("MintFunctional.hardsigmoid", HARD_EDGES)
RELU6_EDGES = V([[-1.0, 0.0, 3.0, 6.0, 7.0, 5.5]])
each(["Functional.relu6", "MintFunctional.relu6", "MS.Functional.relu6"], T(3, 4, low=-2, high=8))
case("Functional.relu6", RELU6_EDGES)
case("MS.Functional.relu6", RELU6_EDGES)
case("Functional.relu6", I(3, 4, low=-3, high=10))  # stays int64
case("MintFunctional.tanh", T(3, 4))
case("MintFunctional.tanh", V(0.5))  # 0-d
each(["MS.Functional.sin", "MS.Functional.sqrt", "MS.Functional.rsqrt"], T(2, 3, low=0.1))
case("MS.Functional.matmul", T(2, 3, 4), T(4, 5))
case("MS.Functional.sqrt", I(2, 3, high=9))  # int -> float32
case("Tensor.__rpow__", T(4), 10000.0)
case("Tensor.__rpow__", T(2, 3), 2)  # int base, float exponent
case("Tensor.__rpow__", I(2, 3, high=6), 2)  # int ** int stays int64, exactly
case("Tensor.__rpow__", I(2, 3, high=6), 2.5)  # -> float32
case("Tensor.__rpow__", V([1.0, 2.0, 0.5, -3.0]), -2.0).constant(0)  # negative base: NaN off the integers (torch's gradient is NaN everywhere)
case("Tensor.__rpow__", T(), 3.0)  # 0-d

# Comparisons: promoted first (an int tensor against 2.5 compares as floats), broadcast, bool.
CMP_A = V([[1.0, 2.0, 3.0, math.nan], [0.0, -0.0, INF, -INF]])
CMP_B = V([[1.0, 3.0, 2.0, math.nan], [-0.0, 0.0, INF, 1.0]])  # ties, NaN, signed zeros, infinities
for _op in ["eq", "ne", "gt", "ge", "lt", "le"]:
    each([f"Torch.{_op}", f"Tensor.{_op}", f"Tensor.__{_op}__", f"Mint.{_op}"], CMP_A, CMP_B)
    case(f"Torch.{_op}", I(3, 4, low=-2, high=3), 0)  # the zoo's masks
    case(f"Torch.{_op}", I(3, 4, low=-2, high=3), 0.5)  # int vs float scalar
    case(f"Tensor.__{_op}__", B(3, 4), B(4))  # bool, broadcast
    case(f"Torch.{_op}", T(3, 1), T())  # 0-d other
    case(f"Torch.{_op}", T(0, 3), T(3))  # empty
case("Torch.eq", I(8, 1, high=8), I(1, 8, high=8))  # the zoo's broadcast

LOGIC_A = V([[0.0, 1.0, math.nan, -0.0], [2.0, 0.0, 0.5, -1.0]])
for _op in ["logical_and", "logical_or", "logical_xor"]:
    each([f"Torch.{_op}", f"Tensor.{_op}", f"Mint.{_op}"], B(3, 4), B(4))
    case(f"Torch.{_op}", LOGIC_A, I(2, 4, low=-1, high=2))  # truth of floats (NaN is true) and ints
    case(f"Torch.{_op}", B(1, 1, 4, 4), B(2, 1, 1, 4))  # the zoo's masks
    case(f"Torch.{_op}", B(0, 4), B(4))  # empty
each(["Torch.logical_not", "Tensor.logical_not", "Mint.logical_not"], B(2, 1, 4, 4))
case("Torch.logical_not", LOGIC_A)
case("Torch.logical_not", I(3, 4, low=-1, high=2))
case("Torch.logical_not", B())  # 0-d

# maximum/minimum: ties split the gradient evenly, NaN propagates.
MAX_A = V([[1.0, 2.0, 3.0, math.nan], [INF, -INF, 0.5, 1e-320]])
MAX_B = V([[1.0, 1.0, 5.0, 2.0], [INF, -INF, math.nan, 1e-320]])  # ties (also infinite and subnormal)
for _op in ["maximum", "minimum"]:
    each([f"Torch.{_op}", f"Tensor.{_op}", f"Mint.{_op}"], T(3, 4), T(4))
    case(f"Torch.{_op}", MAX_A, MAX_B)
    case(f"Mint.{_op}", T(6, 6), T())  # the zoo's 0-d other
    case(f"Torch.{_op}", I(3, 4, low=-3, high=3), V(0, "int64"))
    case(f"Torch.{_op}", B(3, 4), B(3, 4))
    case(f"Torch.{_op}", I(2, 3, high=4), T(3))  # int and float -> float64, only the float differentiated
    case(f"Torch.{_op}", T(0, 4), T(4))  # empty
each(["Functional.pixel_shuffle", "Torch.pixel_shuffle"], T(2, 8, 3, 2), 2)
case("Functional.pixel_shuffle", T(18, 2, 3), 3)  # no batch dimension
case("Functional.pixel_shuffle", T(2, 1, 4, 2, 2), 2)  # two leading dimensions
each(["Functional.pixel_unshuffle", "Torch.pixel_unshuffle"], T(2, 2, 4, 6), 2)
case("Functional.pixel_unshuffle", T(1, 6, 6), 3)
each(["Functional.channel_shuffle", "Torch.channel_shuffle"], T(2, 6, 3, 2), 3)
case("Functional.channel_shuffle", T(2, 4, 5), 2)
each(["Functional.cosine_similarity", "Torch.cosine_similarity"], T(3, 5), T(3, 5))
case("Functional.cosine_similarity", T(2, 4, 3), T(4, 3), dim=-1)  # broadcast
case("Functional.cosine_similarity", V([[1e-9, 2e-9, 0.0], [1.0, 2.0, 3.0]]), T(2, 3), 1, 1e-8)  # a norm below eps
each(["Functional.pairwise_distance", "Torch.pairwise_distance"], T(4, 6), T(4, 6))
case("Functional.pairwise_distance", T(4, 6), T(6), p=1.0, keepdim=True)
case("Functional.pairwise_distance", T(3, 5), T(3, 5), 3.0, 1e-4)
# The targets are labels of +-1, not differentiated (torch refuses a target gradient here).
case("Functional.soft_margin_loss", T(3, 4, low=-4.0, high=4.0), V([[1.0, -1.0, 1.0, -1.0]] * 3)).constant(1)
case("Functional.soft_margin_loss", T(5), V([1.0, -1.0, -1.0, 1.0, 1.0]), reduction="sum").constant(1)
case("Functional.soft_margin_loss", T(2, 3), V([[1.0, -1.0, 1.0], [-1.0, 1.0, 1.0]]), reduction="none").constant(1)
case("Functional.margin_ranking_loss", T(6), T(6), V([1.0, -1.0, 1.0, 1.0, -1.0, -1.0]), 0.3).constant(2)
case("Functional.margin_ranking_loss", T(4), T(4), V([1.0, -1.0, -1.0, 1.0]), reduction="none").constant(2)
case("Functional.hinge_embedding_loss", T(2, 5, low=-1.5, high=2.5), V([[1.0, -1.0, 1.0, -1.0, -1.0]] * 2)).constant(1)
case("Functional.hinge_embedding_loss", T(6, low=-1.5, high=2.5), V([1.0, -1.0, 1.0, -1.0, -1.0, 1.0]), margin=0.5, reduction="sum").constant(1)
case("Torch.mv", T(3, 4), T(4))
case("Torch.addmv", T(3), T(3, 4), T(4))
case("Torch.addmv", T(1), T(3, 4), T(4), beta=0.5, alpha=-2.0)  # input broadcast
case("Torch.addmv", V([math.nan, 1.0]), T(2, 3), T(3), beta=0)  # beta 0 ignores NaN
case("Torch.addr", T(3, 4), T(3), T(4))
case("Torch.addr", T(4), T(3), T(4), beta=2.0, alpha=0.5)
case("Torch.addbmm", T(3, 5), T(4, 3, 2), T(4, 2, 5))
case("Torch.addbmm", T(3, 5), T(2, 3, 2), T(2, 2, 5), beta=0.0, alpha=3.0)
case("Torch.dot", T(5), T(5))
case("Torch.vdot", T(7), T(7))
case("Torch.inner", T(2, 3, 4), T(5, 4))
case("Torch.inner", T(4), T(4))
case("Torch.inner", T(3, 2), V(2.5))  # a 0-D operand multiplies
case("Torch.rsub", T(3, 4), T(4))
case("Torch.rsub", T(3), 5.0, alpha=2)
each(["Functional.prelu", "Torch.prelu"], T(2, 3, 4), T(3))
case("Functional.prelu", T(2, 3), T(1))  # one slope
case("Functional.prelu", T(5), T(1))  # 1-D: one channel
case("Functional.prelu", V([[0.0, -1.0], [1.0, -0.0]]), V([0.25]))  # x = 0 takes the slope's side
case("Functional.rrelu", T(3, 4))
case("Functional.rrelu", T(3, 4), 0.1, 0.3)
case("Torch.rrelu", T(5), upper=0.5)
case("Functional.huber_loss", T(3, 4, low=-3.0, high=3.0), T(3, 4))
case("Functional.huber_loss", T(6, low=-3.0, high=3.0), T(6), reduction="sum", delta=0.5)
case("Functional.huber_loss", T(2, 3, low=-3.0, high=3.0), T(2, 3), reduction="none", delta=2.0)
case("Functional.huber_loss", T(2, 3, low=-3.0, high=3.0), T(2, 3), weight=T(2, 3, low=0.0, high=1.0))
case("Functional.poisson_nll_loss", T(3, 4), T(3, 4, low=0.0, high=3.0))
case("Functional.poisson_nll_loss", T(3, 4, low=0.1, high=3.0), T(3, 4, low=0.0, high=3.0), log_input=False, reduction="sum")
case("Functional.poisson_nll_loss", T(5), V([0.0, 0.5, 1.0, 2.0, 4.0]), full=True, reduction="none")
case("Functional.cosine_embedding_loss", T(4, 6), T(4, 6), V([1.0, -1.0, 1.0, -1.0])).constant(2)
case("Functional.cosine_embedding_loss", T(4, 6), T(4, 6), V([1.0, -1.0, -1.0, -1.0]), margin=0.2, reduction="none").constant(2)
case("Functional.cosine_embedding_loss", T(6), T(6), V(-1.0), margin=-0.5).constant(2)  # 1-D inputs, a 0-D target
case("Functional.triplet_margin_loss", T(4, 5), T(4, 5), T(4, 5))
case("Functional.triplet_margin_loss", T(4, 5), T(4, 5), T(4, 5), margin=2.0, p=1, swap=True, reduction="none")
case("Functional.triplet_margin_loss", T(5), T(5), T(5), p=3, reduction="sum")
case("Functional.multilabel_soft_margin_loss", T(3, 5), V([[1.0, 0.0, 1.0, 0.0, 0.0]] * 3)).constant(1)
case("Functional.multilabel_soft_margin_loss", T(3, 5), V([[0.0, 1.0, 1.0, 0.0, 1.0]] * 3), weight=T(5, low=0.0, high=1.0), reduction="none").constant(1)
case("Torch.full", (2, 3), 1.5)
case("Torch.full", [4], 7)  # an int fill: int64
case("Torch.full", (2, 2), True)
case("Torch.full", (3,), 2.7, dtype=torch.int32)
case("Torch.eye", 3)
case("Torch.eye", 2, 4, dtype=torch.float64)
case("Torch.linspace", -1.0, 1.0, 7)
case("Torch.linspace", 0.0, 10.0, 1, dtype=torch.float64)
case("Torch.linspace", 3.0, -2.0, 11, dtype=torch.float64)
case("Torch.logspace", -2.0, 2.0, 5, dtype=torch.float64)
case("Torch.logspace", 0.0, 3.0, 4, base=2.0)
case("Functional.dropout1d", T(2, 3, 4), p=0.0)
case("Functional.dropout2d", T(2, 3, 2, 2), p=0.0)
case("Functional.dropout3d", T(2, 3, 2, 2, 2), p=0.0)
case("Functional.dropout2d", T(2, 3, 4, 4), 0.5, training=False)
each(["Functional.max_pool1d", "Torch.max_pool1d"], T(2, 3, 9), 2)
case("Functional.max_pool1d", T(3, 10), 3, 2, 1, 2)  # unbatched, padding, dilation
case("Functional.max_pool1d", V([[[0.0, 1.0, 1.0, 0.0, 2.0, 2.0]]]), 2, 1)  # ties in overlapping windows
each(["Functional.max_pool1d_with_indices", "Torch.max_pool1d_with_indices"], T(2, 3, 9), 3, 2)
case("Functional.max_pool1d", T(2, 3, 9), 3, 2, 1, return_indices=True)
case("Functional.max_pool2d_with_indices", T(2, 3, 7, 6), 3, 2, 1)
case("Functional.max_pool2d", T(3, 6, 6), 2, return_indices=True)  # unbatched
case("Functional.max_pool2d_with_indices", V([[[[0.0, 0.0, 1.0], [0.0, 1.0, 1.0], [2.0, 2.0, 0.0]]]]), 2, 1)  # first maximum
case("Torch.max_pool2d", T(2, 3, 8, 7), 2)
case("Torch.max_pool2d", T(2, 3, 8, 7), (3, 2), [], 1)  # stride [] is the kernel
each(["Functional.avg_pool1d", "Torch.avg_pool1d"], T(2, 3, 9), 3)
case("Functional.avg_pool1d", T(3, 10), 4, 2, 2, count_include_pad=False)
each(["Functional.adaptive_max_pool1d", "Torch.adaptive_max_pool1d"], T(2, 3, 10), 4)
case("Functional.adaptive_max_pool1d", T(3, 7), 3, return_indices=True)
case("Functional.adaptive_max_pool1d_with_indices", T(2, 3, 10), 4)
case("Functional.adaptive_max_pool2d", T(2, 3, 7, 9), (3, 4))
case("Functional.adaptive_max_pool2d", T(3, 7, 9), (None, 2), return_indices=True)  # unbatched, a kept dim
case("Functional.adaptive_max_pool2d_with_indices", T(2, 3, 5, 6), 2)
case("Functional.adaptive_max_pool2d", V([[[[1.0, 1.0, 0.0], [1.0, 0.0, 2.0], [0.0, 2.0, 2.0]]]]), 2)  # ties
case("Functional.upsample", T(2, 3, 4, 4), scale_factor=2.0)
case("Functional.upsample", T(2, 3, 5), size=8, mode="linear", align_corners=False)
case("Functional.upsample_nearest", T(2, 3, 4, 5), size=(7, 9))
case("Functional.upsample_bilinear", T(2, 3, 4, 5), scale_factor=2)
case("Functional.upsample_bilinear", T(1, 2, 3, 3), size=(5, 4))
each(["Functional.bilinear", "Torch.bilinear"], T(4, 3), T(4, 5), T(2, 3, 5), T(2))
case("Functional.bilinear", T(2, 3, 3), T(2, 3, 4), T(5, 3, 4))  # leading dims, no bias
case("Functional.instance_norm", T(2, 3, 4, 5))
case("Functional.instance_norm", T(2, 3, 6), weight=T(3), bias=T(3), eps=1e-3)
case("Functional.instance_norm", T(2, 3, 2, 2, 2), T(3), T(3, low=0.5, high=2.0), use_input_stats=False).constant(1, 2)
case("Functional.local_response_norm", T(2, 6, 3, 3), 3)
case("Functional.local_response_norm", T(2, 5, 4), 4, alpha=0.01, beta=0.5, k=2.0)
case("Torch.var_mean", T(3, 4))
case("Torch.var_mean", T(3, 4, 2), (0, 2), correction=0, keepdim=True)
case("Torch.std_mean", T(5, 3), 1)
case("Torch.std_mean", T(4), correction=2)
each(["Torch.cummax", "Torch.cummin"], T(3, 5), 1)
each(["Torch.cummax", "Torch.cummin"], V([[1.0, 1.0, 0.0, 2.0], [3.0, math.nan, 5.0, 0.0]]), 1)  # ties take the last; NaN sticks
case("Torch.cummax", T(4, 3), 0)
case("Torch.cummin", I(2, 5), -1)
case("Torch.cummax", V(2.5), 0)  # 0-D
case("Torch.diff", T(3, 6))
case("Torch.diff", T(4, 5), 2, 0)
case("Torch.diff", T(3, 4), 1, -1, T(3, 2), T(3, 1))  # prepend, append
case("Torch.diff", I(6, high=9), n=3)
case("Torch.diff", B(7))  # bool: xor
case("Torch.diag", T(4))
case("Torch.diag", T(3), 2)
case("Torch.diag", T(3), -1)
case("Torch.diag", T(4, 5))
case("Torch.diag", T(4, 5), 2)
case("Torch.diag", T(4, 5), -3)
case("Torch.diagflat", T(2, 3))
case("Torch.diagflat", T(4), -2)
case("Torch.diag_embed", T(2, 3))
case("Torch.diag_embed", T(2, 3), 1, 0, 2)
case("Torch.diag_embed", T(2, 4), -1, dim1=-1, dim2=0)
case("Torch.kron", T(2, 3), T(3, 2))
case("Torch.kron", T(3), T(2, 2))  # ranks evened
case("Torch.tensordot", T(3, 4, 5), T(4, 5, 2))
case("Torch.tensordot", T(3, 4, 5), T(5, 3), ([0, 2], [1, 0]))
case("Torch.tensordot", T(3, 4), T(2, 5), 0)  # outer product
case("Torch.cdist", T(5, 3), T(4, 3))
case("Torch.cdist", T(2, 5, 3), T(2, 4, 3), 1.0)
case("Torch.cdist", T(6, 3), T(7, 3), 3.0)
case("Torch.cdist", T(30, 4), T(6, 4))  # more than 25 rows: the matrix product
case("Torch.cdist", T(5, 4), T(6, 4), compute_mode="use_mm_for_euclid_dist")
case("Torch.cdist", T(5, 4), T(6, 4), compute_mode="donot_use_mm_for_euclid_dist")
each(["Functional.pdist", "Torch.pdist"], T(5, 3))
case("Functional.pdist", T(6, 4), 1)
case("Functional.pdist", T(4, 2), 3.5)
case("Torch.take", T(3, 4), V([[0, 5], [11, -1]], "int64"))
case("Torch.take_along_dim", T(3, 4), V([[0, 3], [1, 1], [2, 0]], "int64"), 1)
case("Torch.take_along_dim", T(3, 4), V([[0, 1, 2, 0]], "int64"), 0)  # broadcast
case("Torch.take_along_dim", T(3, 4), V([7, 0, 11], "int64"))  # flattened
case("Torch.masked_select", T(3, 4), B(3, 4))
case("Torch.masked_select", T(3, 4), B(4))  # broadcast mask
case("Torch.index_fill", T(3, 4), 1, V([0, 2], "int64"), -1.5)
case("Torch.index_fill", T(3, 4), 0, V([1], "int64"), V(2.0))  # a 0-D tensor value
case("Torch.index_fill", I(3, 4), -1, V([3], "int64"), 7)
case("Torch.index_copy", T(5, 3), 0, V([4, 0, 2], "int64"), T(3, 3))
case("Torch.index_copy", T(2, 4), 1, V([1, 3], "int64"), T(2, 2))
# multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
# in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, ...).
_MHA_PAD = V([[False, False, True, False], [False, True, True, False]], "bool")
case("Functional.multi_head_attention_forward", T(3, 2, 8), T(4, 2, 8), T(4, 2, 8), 8, 2, T(24, 8), T(24), None, None, False, 0.0, T(8, 8), T(8), training=False)
case("Functional.multi_head_attention_forward", T(3, 2, 8), T(4, 2, 8), T(4, 2, 8), 8, 2, T(24, 8), T(24), None, None, False, 0.1, T(8, 8), T(8), training=False, need_weights=False)
case("Functional.multi_head_attention_forward", T(3, 2, 8), T(4, 2, 8), T(4, 2, 8), 8, 4, T(24, 8), None, T(1, 1, 8), T(1, 1, 8), True, 0.0, T(8, 8), None,
     training=False, key_padding_mask=_MHA_PAD, average_attn_weights=False)  # bias_k/v, a zero key, padding
case("Functional.multi_head_attention_forward", T(3, 2, 8), T(4, 2, 8), T(4, 2, 8), 8, 2, T(24, 8), T(24), None, None, False, 0.0, T(8, 8), T(8),
     training=False, attn_mask=T(3, 4)).constant("attn_mask")  # a float mask
case("Functional.multi_head_attention_forward", T(3, 2, 8), T(4, 2, 6), T(4, 2, 5), 8, 2, None, T(24), None, None, False, 0.0, T(8, 8), T(8),
     training=False, use_separate_proj_weight=True, q_proj_weight=T(8, 8), k_proj_weight=T(8, 6), v_proj_weight=T(8, 5),
     attn_mask=V([[[False, True, False, False]] * 3] * 4, "bool"))  # kdim, vdim; a 3-D bool mask
case("Functional.multi_head_attention_forward", T(3, 8), T(4, 8), T(4, 8), 8, 2, T(24, 8), T(24), None, None, False, 0.0, T(8, 8), T(8),
     training=False, key_padding_mask=V([False, True, False, False], "bool"))  # unbatched
case("Functional.multi_head_attention_forward", T(4, 2, 8), T(4, 2, 8), T(4, 2, 8), 8, 2, T(24, 8), T(24), None, None, False, 0.0, T(8, 8), T(8),
     training=False, attn_mask=V([[j > i for j in range(4)] for i in range(4)], "bool"), is_causal=True, need_weights=False)
# _VF.lstm / gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
case("VF.lstm", T(1, 4, 8), [T(1, 1, 6), T(1, 1, 6)], [T(24, 8), T(24, 6), T(24), T(24)], True, 1, 0.0, True, False, True)
case("VF.lstm", T(5, 2, 3), [T(4, 2, 4), T(4, 2, 4)],
     [T(16, 3), T(16, 4), T(16), T(16), T(16, 3), T(16, 4), T(16), T(16), T(16, 8), T(16, 4), T(16), T(16), T(16, 8), T(16, 4), T(16), T(16)],
     True, 2, 0.3, False, True, False)  # two layers, bidirectional; dropout unused in evaluation
case("VF.lstm", T(2, 3, 5), [T(1, 2, 3), T(1, 2, 3)], [T(12, 5), T(12, 3)], False, 1, 0.0, False, False, True)  # no biases
case("VF.gru", T(5, 2, 3), T(1, 2, 4), [T(12, 3), T(12, 4), T(12), T(12)], True, 1, 0.0, False, False, False)
case("VF.gru", T(2, 4, 3), T(4, 2, 5),
     [T(15, 3), T(15, 5), T(15), T(15), T(15, 3), T(15, 5), T(15), T(15), T(15, 10), T(15, 5), T(15), T(15), T(15, 10), T(15, 5), T(15), T(15)],
     True, 2, 0.0, True, True, True)  # two layers, bidirectional, batch first
case("Functional.gaussian_nll_loss", T(4, 3), T(4, 3), T(4, 3, low=0.1, high=2.0))
case("Functional.gaussian_nll_loss", T(4, 3), T(4, 3), T(4, low=0.1, high=2.0), full=True, reduction="sum")  # one fewer dim
case("Functional.gaussian_nll_loss", T(4, 3), T(4, 3), V([[0.5], [1e-8], [2.0], [0.0]]), eps=1e-3, reduction="none")  # last dim 1, clamped
case("Functional.multi_margin_loss", T(4, 5), V([0, 3, 4, 1], "int64"))
case("Functional.multi_margin_loss", T(4, 5), V([2, 2, 0, 4], "int64"), p=2, margin=0.5, reduction="sum")
case("Functional.multi_margin_loss", T(3, 4), V([1, 0, 3], "int64"), weight=T(4, low=0.1, high=1.0), reduction="none").constant("weight")
case("Functional.multi_margin_loss", T(5), V(2, "int64"))  # one sample
case("Functional.multilabel_margin_loss", T(3, 4), V([[3, 0, -1, 1], [0, 1, 2, 3], [-1, 2, 0, 0]], "int64"))
case("Functional.multilabel_margin_loss", T(2, 5), V([[1, 1, -1, 0, 0], [4, -1, 0, 0, 0]], "int64"), reduction="none")  # a class listed twice
case("Functional.multilabel_margin_loss", T(4), V([2, -1, 0, 0], "int64"), reduction="sum")  # one sample
case("Torch.maximum", V([[0.0, 0.0], [2.0, 2.0]]), V([[0.0, 1.0], [2.0, -1.0]]))  # ties after a ReLU
each(["Torch.nonzero", "Torch.argwhere"], V([[0.0, 1.5], [-2.0, 0.0], [0.0, 0.0]]))
case("Torch.nonzero", I(3, 4, high=2))
case("Torch.nonzero", B(2, 3, 2))
case("Torch.nonzero", V([0.0, math.nan, 3.0]), as_tuple=True)
case("Torch.nonzero", V(2.0))  # 0-d: one row of no columns
case("Torch.bincount", V([1, 3, 3, 0, 7], dtype="int64"))
case("Torch.bincount", V([1, 3, 3, 0], dtype="int64"), T(4), minlength=6).constant(1)  # torch has no derivative
case("Torch.bincount", V([2, 2, 0], dtype="int32"), weights=V([0.5, 1.5, 2.0], dtype="float64")).constant("weights")
# out= is the function without it, judged on the tensor it returns (Adam's amsgrad:
# torch.maximum(a, b, out=c)); torch differentiates no out= call.
case("Torch.maximum", T(3, 4), T(3, 4), out=T(3, 4)).backward = False
case("Torch.add", T(3, 4), T(4), alpha=2.0, out=T(3, 4)).backward = False

# where: three arguments broadcast; the condition alone gives its nonzero coordinates.
each(["Torch.where", "MS.Functional.where"], B(6, 6), I(6, 6, high=9), I(6, 6, high=9, dtype="int32"))  # the zoo's buckets
case("MS.Functional.where", B(3, 4), T(3, 4), T(4))
case("MS.Functional.where", B(2), 1.0, I(2, dtype="int32"))
case("Torch.where", B(16, 2))  # the zoo's one-argument form
case("Torch.where", V([[False, False], [False, False]], "bool"))  # nothing true
case("Torch.where", V(True, "bool"))  # 0-d
case("Torch.where", I(2, 3, 4, low=-1, high=2))  # nonzero ints
case("Torch.where", B(3, 4), 1.0, 0.0)  # two Python numbers -> float32
case("Torch.where", B(0, 4), T(4), T(0, 4))  # empty

case("MS.Functional.tril", T(8, 8))
case("MS.Functional.tril", V([[True] * 4] * 4, "bool"), 1)  # bool, diagonal

# topk: values and indices; ties in torch's order (partial_sort when
# 64·k <= n, else nth_element and std::sort of the first k-1).
each(["Torch.topk", "Tensor.topk", "Mint.topk"], T(16, 4), 2)
case("Torch.topk", T(16, 4), 2, dim=-1)  # the zoo's call
case("Torch.topk", _ties(6, 8, 3, 1), 3)  # nth_element, insertion sort
case("Torch.topk", _ties(4, 20, 4, 2), 5)
case("Torch.topk", _ties(3, 40, 3, 3), 30)  # std::sort of 29: introsort
case("Torch.topk", _ties(3, 200, 3, 4), 2)  # partial_sort (heap)
case("Torch.topk", _ties(2, 700, 5, 5), 10)
case("Torch.topk", _ties(4, 20, 3, 6), 5, largest=False)
case("Torch.topk", _ties(4, 20, 3, 7), 6, sorted=False)
case("Torch.topk", _ties(7, 5, 3, 8), 3, 0)  # along dim 0
case("Torch.topk", V([[1.0, math.nan, 3.0, -INF, INF, math.nan]]), 4)  # NaN counts as the largest
case("Torch.topk", V([[1.0, math.nan, 3.0, -INF, INF, math.nan]]), 3, largest=False)
case("Torch.topk", V([[0.0] * 100]), 3)  # all tied
case("Torch.topk", T(3, 5), 0)  # k = 0: empty
case("Torch.topk", T(), 1)  # 0-d
case("Torch.topk", I(3, 5, high=4), 2)  # int64 values
case("MS.Functional.topk", V([[0.3, -1.0, 2.5, 0.7], [1.5, 0.1, -0.2, 0.9]]), 2)  # no ties: see _ms_topk
case("MS.Functional.topk", V([[0.3, -1.0, 2.5, 0.7], [1.5, 0.1, -0.2, 0.9]]), 3, largest=False)
case("MS.Functional.topk", V([[0.3, -1.0, 2.5], [1.5, 0.1, -0.2]]), 1, 0)

# one_hot
each(["Functional.one_hot", "MintFunctional.one_hot"], I(16, 2, high=4), num_classes=4)
case("Functional.one_hot", V([0, 3, 1], "int64"))  # num_classes inferred
case("Functional.one_hot", V([], "int64"), 4)  # empty
case("MS.Functional.one_hot", I(12, 2, high=4, dtype="int32"), 4, V(1.0), V(0.0))  # the zoo's call: zero gradient
case("MS.Functional.one_hot", V([0, 2], "int32"), 3)  # int on/off -> int64
case("MS.Functional.one_hot", V([[0, 2], [1, 1]], "int32"), 3, V(2.0), V(-0.5), 0)  # classes along axis 0

# scatter / scatter_add / index_add: the input's gradient is cut where an
# element is set; every source element gets its target's gradient.
each(["Torch.scatter", "Tensor.scatter", "Mint.scatter"], T(16, 4), 1, V([[i % 4, (i + 1) % 4] for i in range(16)], "int64"), T(16, 2))
case("Torch.scatter", T(2, 3), 1, V([[0, 1, 1]], "int64"), T(1, 3))  # duplicates: the last write wins
case("Torch.scatter", T(3, 4), 0, V([[2, 0, 1, 2], [0, 0, 0, 1]], "int64"), T(3, 5)).constant(3)  # src larger than the index (torch's backward fails for it)
case("Torch.scatter", T(3, 4), 1, V([[3], [0], [1]], "int64"), 2.5)  # a Python value
case("Torch.scatter", I(3, 4), 1, V([[3], [0], [1]], "int64"), 2.7)  # into an int tensor: cast
case("Torch.scatter", T(3, 4), 1, V([[0, 0], [1, 3], [2, 2]], "int64"), T(3, 2), reduce="add").constant(0, 3)  # torch has no derivative for reduce=
case("Torch.scatter", T(3, 4), 1, V([[], [], []], "int64"), T(3, 0))  # empty index
each(["Torch.scatter_add", "Tensor.scatter_add", "Mint.scatter_add"], T(3, 4), 1, V([[0, 0, 2], [3, 1, 3], [1, 1, 1]], "int64"), T(3, 3))
case("Tensor.scatter_add", I(4, high=3), 0, I(32, high=4), I(32, high=3))  # the zoo's int64 counts
case("Torch.scatter_add", T(2, 3), 0, V([[1, 0, 1]], "int64"), T(1, 3))  # index smaller than the input
case("MS.Functional.tensor_scatter_elements", T(2, 8), I(12, 8, high=2), T(12, 8), 0, "add")  # the zoo's call
case("MS.Functional.tensor_scatter_elements", T(2, 3), V([[0, 1, 1]], "int64"), T(1, 3), 1)  # 'none': the last write wins
each(["Torch.index_add", "Tensor.index_add", "Mint.index_add"], T(16, 16), 0, V([3, 0, 3, 15, 7], "int64"), T(5, 16))  # duplicates
case("Torch.index_add", T(3, 5), 1, V([4, 4, 0], "int64"), T(3, 3), alpha=-2.5)
case("Torch.index_add", I(3, 4), 0, V([2, 2], "int64"), I(2, 4))
case("Torch.index_add", T(3, 4), 0, V([], "int64"), T(0, 4))  # empty index
case("MS.Functional.index_add", T(2, 8), I(12, high=2, dtype="int32"), T(12, 8), 0)  # the zoo's call

# repeat_interleave: int or tensor repeats, along a dim or flattened.
each(["Torch.repeat_interleave", "Tensor.repeat_interleave", "MS.Functional.repeat_interleave"], T(2, 2, 8, 8), 2, 1)  # the zoo's GQA
case("Torch.repeat_interleave", T(2, 3), 2)  # flattened
case("Torch.repeat_interleave", T(3, 2), V([1, 0, 3], "int64"), dim=0)  # a zero repeat
case("Torch.repeat_interleave", T(3, 2), V([2], "int64"), dim=-1)  # one repeat for all
case("Tensor.repeat_interleave", I(2, 3), 3, 1)
case("Torch.repeat_interleave", V([2, 0, 1], "int64"))  # repeats alone: the repeated positions
case("Torch.repeat_interleave", T(), 3)  # 0-d
case("MS.Functional.repeat_interleave", T(2, 2), V([1, 2], "int32"), 0)

each(["Torch.outer", "Tensor.outer", "Mint.outer", "MS.Functional.outer"], T(8), T(4))
case("Torch.outer", I(3), T(2))  # int x float
case("Torch.outer", T(0), T(3))  # empty

each(["Torch.narrow", "Tensor.narrow", "Mint.narrow"], T(2, 6, 8), 1, 0, 1)
case("Torch.narrow", T(2, 6, 8), -1, -3, 2)  # negative dim and start
case("Torch.narrow", T(4, 3), 0, V(1, "int64"), 2)  # a 0-d tensor start
case("Torch.narrow", T(4, 3), 1, 3, 0)  # empty

each(["Torch.broadcast_to", "Tensor.broadcast_to", "Mint.broadcast_to"], T(1, 2, 6, 6), [2, 2, 6, 6])
case("Torch.broadcast_to", T(3, 1), (2, -1, 4))  # -1 keeps a dim
case("Torch.broadcast_to", I(3), (0, 3))  # empty
case("Tensor.swapaxes", T(2, 4, 8, 8), 2, 3)
case("Tensor.swapaxes", T(2, 3), axis0=0, axis1=-1)

each(["Torch.logsumexp", "Tensor.logsumexp", "Mint.logsumexp"], T(16, 4), -1)
case("Torch.logsumexp", T(2, 3, 4, low=-50, high=50), (0, 2), keepdim=True)
case("Torch.logsumexp", V([[-INF, -INF], [INF, 1.0], [1e3, 1e3]]), 1)  # masked rows, infinities, no overflow
case("Torch.logsumexp", I(3, 4), 1)  # int -> float32
case("Torch.logsumexp", T(3, 0), 1)  # no elements: -inf
case("Torch.logsumexp", T(4), 0, True)

undefined_values("Torch.empty", 4, 8, 8, dtype=torch.float32)  # the zoo's call
undefined_values("Torch.empty_like", T(3, 4))
undefined_values("Torch.empty_like", T(2, 3), dtype=torch.float16)
undefined_values("Torch.empty_strided", (2, 3), (3, 1), dtype=torch.float32)
undefined_values("Tensor.new_empty", T(3, 4), (2, 5))
undefined_values("Tensor.new_empty", I(2, 3), 4, 1, dtype=torch.bfloat16)
undefined_values("Tensor.new_empty_strided", T(3, 4), (2, 3), (1, 2))
undefined_values("Torch.empty", (2, 0), dtype=torch.int64)

# MindSpore spellings of torch's ops.
case("MS.Functional.arange", 8)
case("MS.Functional.arange", 0.0, 2.0, 0.5)  # floats -> float32
case("MS.Functional.arange", 1, 10, 3, dtype=torch.int32)
case("MS.Functional.stack", [T(12, 8), T(12, 8), T(12, 8), T(12, 8)], 1)
case("MS.Functional.stack", [T(3), T(3)], axis=-1)
case("MS.Functional.cat", [T(8, 4), T(8, 4)], -1)
case("MS.Functional.cat", [T(160), T(48), T(16)])
case("MS.Functional.assign", T(20, 8), T(20, 8)).constant(0, 1)  # in place: no gradient
case("MS.Functional.assign", I(3, dtype="int32"), I(3, dtype="int32"))
case("MS.Functional.clip_by_global_norm", [T(4, 3), T(3), T(2, 2)], 1.0)  # clipped
case("MS.Functional.clip_by_global_norm", [T(4, 3, low=-0.01, high=0.01), T(3, low=-0.01, high=0.01)], 1.0)  # below the norm: unchanged
case("MS.Functional.clip_by_global_norm", [T(5), T()], clip_norm=0.5)  # a 0-d tensor comes out of shape [1]
case("MS.Tensor.sum", T(12, 2), -1, keepdims=True)  # the zoo's call
case("MS.Tensor.sum", T(4))
case("MS.Tensor.sum", T(3, 4), -1, True)  # torch-style keepdim
case("MS.Tensor.sum", T(3, 4), (0, 1), torch.float64, False, 10.0)  # dtype, initial
case("MS.Tensor.sum", I(3, 4, dtype="int32"), 0)  # -> int64
case("MS.Tensor.var", T(2, 6, 8), -1, keepdims=True)  # the zoo's call: ddof 0
case("MS.Tensor.var", T(3, 4), 0, 1)  # ddof 1
case("MS.Tensor.var", T(3, 4), -1, correction=0, keepdim=True)  # torch-style keywords
case("MS.Tensor.var", T(3, 4), 1, keepdim=False)  # torch-style: correction 1
case("MS.Tensor.std", T(3, 4))  # ddof 0
# mindspore.ops.var/std(input, axis=None, ddof=0, keepdims=False): MindSpore itself is the reference.
# MindSpore's forward in MindSpore; its backward (MindSpore's CPU
# AvgPool3DGrad takes float16 and float32 alone) in torch, under MindSpore's signature.
def _ms_avg_pool1d(input_x, kernel_size=1, stride=1, padding=0, ceil_mode=False, count_include_pad=True):
    return torch.nn.functional.avg_pool1d(input_x, kernel_size, stride, padding, ceil_mode, count_include_pad)


CASES.append(Case("MS.Functional.avg_pool1d", (T(2, 3, 9), 3), {}, _ms_avg_pool1d))
for _c in [ms_case("MS.Functional.avg_pool1d", T(2, 3, 9), 3), ms_case("MS.Functional.avg_pool1d", T(2, 3, 10), 4, 2, 1, count_include_pad=False)]:
    _c.backward = False
ms_case("MS.Functional.var", T(3, 4))
ms_case("MS.Functional.var", T(3, 4), 1, 1)
ms_case("MS.Functional.var", T(2, 3, 4), (0, 2), ddof=1, keepdims=True)
ms_case("MS.Functional.var", T(3, 5), -1, ddof=True)
ms_case("MS.Functional.std", T(3, 4))
ms_case("MS.Functional.std", T(2, 3, 4), 1, 1, True)
ms_case("MS.Functional.std", T(4, 5), axis=0, keepdims=True)
case("MS.Tensor.std", T(3, 4), 1, 1, True)

# Backward of in-place adds (of a non-leaf): the gradient of add.
inplace_backward("Tensor.__iadd__", T(2, 8, 16), T(2, 8, 16))
inplace_backward("Tensor.__iadd__", T(2, 2, 8, 8), T(1, 2, 8, 8))  # broadcast other
inplace_backward("Tensor.add_", T(3, 4), T(4), alpha=-0.5)
inplace_backward("Tensor.__iadd__", T(), 1)  # the zoo's counter

# --- last zoo ops

each(["Torch.t", "Tensor.t"], T(3, 4))
case("Tensor.t", T(5))  # 1-D: as is
case("Tensor.t", T())  # 0-D: as is

case("Torch.full_like", T(3, 4), 0.5)
case("Torch.full_like", I(3, 4), 2.7)  # int tensor: the value is truncated
case("Torch.full_like", T(3, 4), -INF, dtype=torch.float32)
case("Torch.full_like", T(2, 3), 7, dtype=torch.int32)

SPECIAL["MS.Functional.masked_fill"] = lambda input_x, mask, value: torch.masked_fill(input_x, mask, value)  # MindSpore's names
case("MS.Functional.masked_fill", T(3, 4), B(4), -1e9)  # mask broadcasts
case("MS.Functional.masked_fill", T(3, 4), B(3, 1), V(0.5))  # 0-d tensor value, differentiated
case("MS.Functional.masked_fill", input_x=T(3, 4), mask=B(3, 4), value=0.0)

# In place: the updated self, in self's dtype, forward only.
case("Tensor.clamp_", T(3, 4), -0.5, 0.5)
case("Tensor.clamp_", T(3, 4), min=0.0)
case("Tensor.clamp_", I(3, 4), 1, 3)
case("Tensor.div_", T(3, 4), T(4, low=0.5, high=2.0))
case("Tensor.div_", T(3, 4), 3.0)
case("Tensor.div_", I(3, 4, low=-5), 2, rounding_mode="floor")
case("Tensor.rsqrt_", T(3, 4, low=0.1, high=2.0))
case("Tensor.square_", T(3, 4))
case("Tensor.square_", I(3, 4, low=-5))

each(["Tensor.norm", "Torch.norm"], T(3, 4))  # 'fro' over everything
case("Tensor.norm", T(3, 4), 1, 1)
case("Tensor.norm", T(2, 3, 4), "fro", (1, 2), True)
case("Tensor.norm", T(3, 4), INF, dim=0)
case("Tensor.norm", T(3, 4), p=3, dim=-1, keepdim=True)
case("Torch.norm", T(3, 4), 2, dim=1, dtype=torch.float64)

# max/min: the whole tensor (ties split the gradient), over a dim (values
# and the first index, which takes the gradient), or elementwise.
each(["Torch.max", "Tensor.max", "Torch.min", "Tensor.min"], T(3, 4))
case("Torch.max", V([[1.0, 3.0, 3.0], [2.0, 0.0, 3.0]]))  # ties: the gradient split three ways
case("Tensor.min", V(1.5))  # 0-d
each(["Torch.max", "Tensor.max", "Torch.min", "Tensor.min"], T(3, 4, 5), 1)
case("Torch.max", T(3, 4), -1, True)
case("Tensor.min", T(3, 4), dim=0, keepdim=True)
case("Torch.max", V([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]), 1)  # ties: the first index
case("Torch.min", V([[1.0, 1.0, 3.0], [2.0, 0.0, 0.0]]), 1)
case("Torch.max", I(3, 4), 0)  # int64 values
case("Tensor.max", V(2.0), 0)  # 0-d over dim 0: itself, index 0
each(["Torch.max", "Tensor.max", "Torch.min", "Tensor.min"], T(3, 4), T(4))  # elementwise
case("Torch.max", T(3, 4), other=T(3, 4))

# --- elementwise math (runtime/src/ops/math.rs): each under its torch name;
# the method, in-place and alias forms are derived and run these cases too.
for _op in ["tan", "atan", "sinh", "cosh", "asinh", "expm1", "exp2", "sinc", "deg2rad", "rad2deg"]:
    case(f"Torch.{_op}", T(3, 4, low=-1.2, high=1.2))
case("Torch.sinc", V([0.0, 1.0, -2.5, 0.5]))
case("Torch.exp2", I(3, 4))  # integers promote to float32
for _op in ["asin", "acos", "atanh"]:
    case(f"Torch.{_op}", T(3, 4, low=-0.9, high=0.9))
case("Torch.acosh", T(3, 4, low=1.1, high=4.0))
for _op in ["log10", "log2"]:
    case(f"Torch.{_op}", T(3, 4, low=0.1, high=5.0))
case("Torch.log10", V([0.0, 1.0, -1.0]))  # -inf and NaN
case("Torch.log1p", T(3, 4, low=-0.9, high=3.0))
for _op in ["ceil", "floor", "trunc", "sign", "frac"]:
    case(f"Torch.{_op}", T(3, 4, low=-3.0, high=3.0))
case("Torch.floor", I(3, 4, low=-5))  # integers unchanged
case("Torch.sign", I(3, 4, low=-2, high=3))
case("Torch.sgn", I(3, 4, low=-2, high=3))  # its float gradient is a ZeroTensor numpy cannot read
case("Torch.sign", V([0.0, -0.0, 2.0, -1.5]))
_SPECIALS = V([0.0, -0.0, 1.5, -2.0, INF, -INF, float("nan")])
for _op in ["isfinite", "isinf", "isnan", "isposinf", "isneginf", "signbit"]:
    case(f"Torch.{_op}", _SPECIALS)
case("Torch.isnan", I(3, 4))
case("Torch.atan2", T(3, 4), T(4))
case("Torch.hypot", T(3, 4), T(3, 4))
case("Torch.logaddexp", T(3, 4), T(4))
case("Torch.logaddexp2", T(3, 4), T(3, 1))
case("Torch.xlogy", T(3, 4), T(3, 4, low=0.1, high=3.0))
case("Torch.xlogy", V([0.0, 1.0, 2.0]), V([0.0, 2.0, 0.5]))
case("Torch.fmod", T(3, 4, low=-5.0, high=5.0), T(4, low=0.5, high=2.0))
case("Torch.fmod", I(3, 4, low=-7, high=7), 3)
case("Torch.fmod", T(3, 4, low=-5.0, high=5.0), -1.5)
case("Torch.remainder", T(3, 4, low=-5.0, high=5.0), T(4, low=0.5, high=2.0))
case("Torch.remainder", T(3, 4, low=-5.0, high=5.0), -1.5)
case("Torch.remainder", I(3, 4, low=-7, high=7), 3)
case("Torch.copysign", T(3, 4), T(4))
for _op in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
    case(f"Torch.{_op}", I(3, 4, low=-8, high=8), I(4, low=0, high=8))
    case(f"Torch.{_op}", B(3, 4), B(3, 4))
    case(f"Torch.{_op}", I(3, 4, low=0, high=16), 5)
for _op in ["bitwise_left_shift", "bitwise_right_shift"]:
    case(f"Torch.{_op}", I(3, 4, low=-8, high=8), I(4, low=0, high=4))
case("Torch.bitwise_not", I(3, 4, low=-8, high=8))
case("Torch.bitwise_not", B(3, 4))
case("Torch.gcd", I(3, 4, low=-12, high=12), I(4, low=0, high=9))
case("Torch.lcm", I(3, 4, low=-12, high=12), I(4, low=0, high=9))
case("Torch.floor_divide", T(3, 4, low=-5.0, high=5.0), T(4, low=0.5, high=2.0)).constant(0, 1)  # no derivative in torch
case("Torch.floor_divide", I(3, 4, low=-7, high=7), 2)
case("Torch.round", V([0.5, 1.5, 2.5, -0.5, -1.5, 1.2345, -2.71828]))
case("Torch.round", T(3, 4, low=-5.0, high=5.0), decimals=2)
case("Torch.round", I(3, 4))
case("Torch.clamp_min", T(3, 4), 0.25)
case("Torch.clamp_min", T(3, 4), T(4))
case("Torch.clamp_max", T(3, 4), -0.5)
case("Torch.clamp_max", I(3, 4), 2)
_NANS = V([1.0, float("nan"), -2.0, float("nan"), 3.0])
_NANS2 = V([float("nan"), 2.0, -3.0, float("nan"), 3.0])
for _op in ["fmax", "fmin"]:
    case(f"Torch.{_op}", T(3, 4), T(4))
    case(f"Torch.{_op}", _NANS, _NANS2).constant(0, 1)
case("Torch.float_power", T(3, 4, low=0.5, high=2.0), 2.5)
case("Torch.float_power", T(3, 4, low=0.5, high=2.0), T(4))
case("Torch.float_power", I(3, 4), 2)
case("Torch.heaviside", V([-1.0, 0.0, 2.0, 0.0]), V([0.5, 0.5, 0.5, 1.0])).constant(0, 1)
case("Torch.heaviside", I(3, 4, low=-2, high=3), I(4))
case("Torch.ldexp", T(3, 4), I(4, low=-3, high=4))
case("Torch.logit", T(3, 4, low=0.05, high=0.95))
case("Torch.logit", V([0.0, 0.01, 0.5, 0.99, 1.0]), 0.05)
case("Torch.nan_to_num", V([1.0, float("nan"), INF, -INF, -2.0]))
case("Torch.nan_to_num", V([1.0, float("nan"), INF, -INF]), 0.5, 10.0, -10.0)
case("Torch.nan_to_num", T(3, 4), nan=1.0)
case("Torch.erfc", T(3, 4))
case("Torch.isclose", V([1.0, 1.0 + 1e-6, float("nan"), INF, 2.0]), V([1.0, 1.0, float("nan"), INF, 2.1]))
case("Torch.isclose", V([1.0, float("nan")]), V([1.1, float("nan")]), rtol=0.2, equal_nan=True)

# --- the unbind/split/chunk families and other data movement (shape.rs)
case("Torch.unbind", T(3, 4))
case("Torch.unbind", T(2, 3, 4), 1)
case("Torch.unbind", T(2, 3, 4), dim=-1)
case("Torch.split_with_sizes", T(5, 4), [2, 3])
case("Torch.split_with_sizes", T(3, 6), [1, 0, 5], dim=1)
case("Torch.unsafe_split_with_sizes", T(5, 4), [4, 1])
case("Torch.unsafe_split", T(5, 4), 2)
case("Torch.unsafe_chunk", T(5, 4), 3)
case("Torch.tensor_split", T(7, 4), 3)
case("Torch.tensor_split", T(3, 7), [1, 5], dim=1)
case("Torch.tensor_split", T(6), [2, -1, 10])
case("Torch.hsplit", T(3, 6), 3)
case("Torch.hsplit", T(6), [2, 4])
case("Torch.vsplit", T(4, 3), 2)
case("Torch.dsplit", T(2, 3, 4), [1, 3])
case("Torch.movedim", T(2, 3, 4), 0, -1)
case("Torch.movedim", T(2, 3, 4, 5), [0, 1], [3, 0])
case("Torch.flip", T(2, 3, 4), [0, 2])
case("Torch.flip", T(2, 3), [-1])
case("Torch.fliplr", T(3, 4))
case("Torch.flipud", T(3, 4, 2))
case("Torch.roll", T(3, 4), 2)
case("Torch.roll", T(3, 4), -1, 1)
case("Torch.roll", T(3, 4), [1, 5], [0, 1])
case("Torch.rot90", T(3, 4))
case("Torch.rot90", T(2, 3, 4), 3, [1, 2])
case("Torch.rot90", T(3, 4), -2)
case("Torch.tile", T(2, 3), [2, 1])
case("Torch.tile", T(3), [2, 2])
case("Tensor.repeat", T(2, 3), 2, 1)
case("Tensor.repeat", T(3), [2, 1, 2])
case("Torch.ravel", T(2, 3, 4))
case("Tensor.view_as", T(2, 6), T(3, 4))
case("Tensor.reshape_as", T(2, 6), T(12))
case("Tensor.expand_as", T(3, 1), T(2, 3, 4))
case("Torch.select", T(3, 4), 1, -1)
case("Torch.select", T(2, 3, 4), 0, 1)
case("Torch.diagonal", T(3, 4))
case("Torch.diagonal", T(3, 4), 1)
case("Torch.diagonal", T(2, 3, 4), -1, 1, 2)
case("Torch.diagonal", T(3, 4), offset=5)
case("Torch.narrow_copy", T(4, 5), 1, 1, 3)
case("Torch.atleast_1d", V(1.5))
case("Torch.atleast_2d", T(3))
case("Torch.atleast_3d", T(3, 4))
case("Torch.atleast_3d", [T(3), V(2.0)])
case("Torch.hstack", [T(2, 3), T(2, 1)])
case("Torch.hstack", [T(3), T(2)])
case("Torch.vstack", [T(3), T(2, 3)])
case("Torch.dstack", [T(2, 3), T(2, 3, 2)])
case("Torch.column_stack", [T(3), T(3, 2)])
case("Torch.unflatten", T(2, 12), 1, [3, -1])

# --- einsum (einsum.rs): contractions, batch dims, outer products,
# reductions, transposes, diagonals, traces, ellipsis broadcasting, the
# implicit output, three operands, the list form.
case("Torch.einsum", "ij,jk->ik", T(3, 4), T(4, 5))
case("Torch.einsum", "bhqd,bhkd->bhqk", T(2, 3, 4, 5), T(2, 3, 6, 5))
case("Torch.einsum", "i,j->ij", T(3), T(4))
case("Torch.einsum", "ij->", T(3, 4))
case("Torch.einsum", "ij->ji", T(3, 4))
case("Torch.einsum", "ii->i", T(4, 4))
case("Torch.einsum", "ii", T(4, 4))
case("Torch.einsum", "iij->j", T(3, 3, 2))
case("Torch.einsum", "...ij,...jk->...ik", T(2, 3, 4), T(4, 5))
case("Torch.einsum", "b...d,d->b...", T(2, 3, 4, 5), T(5))
case("Torch.einsum", "ij,jk", T(3, 4), T(4, 5))
case("Torch.einsum", "ba,ca", T(3, 4), T(2, 4))
case("Torch.einsum", "ij,jk,kl->il", T(2, 3), T(3, 4), T(4, 5))
case("Torch.einsum", "bi,bj,bk->bijk", T(2, 3), T(2, 2), T(2, 4))
case("Torch.einsum", "i j , j -> i", T(3, 4), T(4))
case("Torch.einsum", "ij,ij->i", T(3, 4), T(3, 4))
case("Torch.einsum", "ij,kj->", T(3, 4), T(2, 4))
case("Torch.einsum", "ij,jk->ik", [T(3, 4), T(4, 2)])
case("Torch.einsum", "...,...->...", T(3, 1), T(4))

# --- activations of torch.nn.functional (activation.rs); their in-place forms are derived
for _op in ["elu", "selu", "celu", "softplus", "softsign", "logsigmoid", "tanhshrink", "mish", "hardshrink", "softshrink", "hardtanh"]:
    case(f"Functional.{_op}", T(3, 4, low=-3.0, high=3.0))
case("Functional.elu", T(3, 4), 0.5)
case("Functional.elu", V([-1000.0, 1000.0, 0.0]))
case("Functional.celu", T(3, 4), alpha=2.0)
case("Functional.softplus", T(3, 4, low=-5.0, high=5.0), beta=3.0, threshold=4.0)
case("Functional.softplus", V([-100.0, 30.0, 0.0]))
case("Functional.logsigmoid", V([-100.0, 100.0, 0.0]))
case("Functional.hardshrink", T(3, 4), 1.0)
case("Functional.softshrink", T(3, 4), lambd=0.25)
case("Functional.hardtanh", V([-2.0, -1.0, 0.5, 1.0, 2.0]))
case("Functional.hardtanh", T(3, 4), -0.5, 0.5)
case("Functional.threshold", T(3, 4), 0.1, -7.0)
case("Functional.threshold", V([0.1, 0.2, -1.0]), 0.1, 20.0)
case("Torch.selu", T(3, 4))
case("Torch.celu", T(3, 4))
case("Torch.hardshrink", T(3, 4))
case("Torch.threshold", T(3, 4), 0.5, 0.0)
case("Functional.glu", T(3, 4))
case("Functional.glu", T(4, 3), 0)
case("Functional.softmin", T(3, 4), 1)
case("Functional.softmin", T(3, 4), dim=0, dtype=torch.float64)
case("MS.Functional.softmin", T(2, 3, 4))  # the last axis by default, not torch's implicit dim
case("MS.Functional.softmin", T(3, 4), 0)

# MindSpore's spellings of the unbind/split family and einsum (keyword axis binds as dim).
each(["MS.Functional.unbind", "MS.Tensor.unbind"], T(3, 4), 1)
each(["MS.Functional.tensor_split", "MS.Tensor.tensor_split"], T(7, 4), 3)
case("MS.Tensor.tensor_split", T(3, 7), [1, 5], 1)
case("MS.Functional.chunk", T(5, 4), 2)
case("MS.Functional.split", T(5, 4), [2, 3])
case("MS.Functional.split", T(3, 6), 4, 1)
case("MS.Functional.einsum", "bij,bjk->bik", T(2, 3, 4), T(2, 4, 5))

# --- reductions (reduce.rs): all/any, prod, nansum/nanmean, cumprod, logcumsumexp, count_nonzero
for _op in ["all", "any"]:
    case(f"Torch.{_op}", B(3, 4))
    case(f"Torch.{_op}", I(3, 4, low=0, high=2), 1)
    case(f"Torch.{_op}", T(3, 4), 0, True)
    case(f"Torch.{_op}", V([[0.0, float("nan")], [0.0, 0.0]]), dim=1)
case("Torch.prod", T(3, 4))
case("Torch.prod", T(3, 5), 1)
case("Torch.prod", T(3, 4), 0, True)
case("Torch.prod", V([[1.0, 0.0, 2.0], [3.0, 4.0, 0.5]]), 1)  # a zero: its gradient is the others' product
case("Torch.prod", I(3, 4, low=1, high=4))
case("Torch.prod", T(2, 3), dtype=torch.float64)
case("Torch.nansum", V([[1.0, float("nan"), 2.0], [float("nan"), 3.0, 4.0]]))
case("Torch.nansum", T(3, 4), 1, True)
case("Torch.nanmean", V([[1.0, float("nan"), 2.0], [float("nan"), 3.0, 4.0]]), 1)
case("Torch.nanmean", T(3, 4))
case("Torch.cumprod", T(3, 5), 1)
case("Torch.cumprod", T(7), 0)
case("Torch.cumprod", V([2.0, 0.0, 3.0, 4.0]), 0)
case("Torch.cumprod", I(2, 3, low=1, high=4), -1)
case("Torch.logcumsumexp", T(3, 5), 1)
case("Torch.logcumsumexp", T(4, 2, low=-50.0, high=50.0), 0)
case("Torch.count_nonzero", I(3, 4, low=0, high=2))
case("Torch.count_nonzero", T(3, 4), 0)
case("Torch.count_nonzero", I(2, 3, 4, low=0, high=2), [0, 2])

# --- protocol methods msprobe records: __bool__ (and __nonzero__, derived), a Python bool
case("Tensor.__bool__", V([2.5]))
case("Tensor.__bool__", V(0.0))
case("Tensor.__bool__", V([[1]], "int64"))
case("Tensor.__rmod__", T(3, 4, low=0.5, high=3.0), 5.0).constant(0)  # no derivative in torch
case("Tensor.__rmod__", I(3, 4, low=1, high=5), 7)

# --- Tensor.where (self is the value where the condition holds), pad, normalize
case("Tensor.where", T(3, 4), B(3, 4), T(4))
case("Tensor.where", T(3, 4), B(4), 0.5)
case("Functional.pad", T(2, 3, 4), [1, 2])
case("Functional.pad", T(2, 3, 4), [1, 0, 2, 1], value=-1.5)
case("Functional.pad", T(2, 3, 4), [-1, 2])  # a crop and a pad
case("Functional.pad", T(2, 3, 4), [2, 1], mode="replicate")
case("Functional.pad", T(1, 2, 3, 4), [1, 2, 2, 1], "reflect")
case("Functional.pad", T(2, 3, 4), [2, 3], mode="circular")
case("Functional.pad", I(3, 4), [1, 1], value=7)
case("Functional.normalize", T(3, 4))
case("Functional.normalize", T(3, 4), 1.0, 0)
case("Functional.normalize", T(2, 3, 4), dim=-1)
case("Functional.normalize", V([[0.0, 0.0], [3.0, 4.0]]), eps=0.5)

# --- sort, argsort, msort (index.rs), aminmax (reduce.rs)
case("Torch.sort", T(3, 5))
case("Torch.sort", T(3, 5), 0, True)
case("Torch.sort", V([3.0, float("nan"), -1.0, 2.0]), descending=True)
case("Torch.sort", I(2, 6, low=0, high=3), stable=True)  # ties keep their order
case("Torch.argsort", T(3, 5), 1)
case("Torch.argsort", I(8, low=0, high=3), stable=True, descending=True)
case("Torch.msort", T(4, 3))
case("Torch.aminmax", T(3, 4))
case("Torch.aminmax", T(3, 4), dim=1, keepdim=True)

# (Appended last: a case's random inputs are seeded by its place in the list.)
# The torch-level losses: reduction as torch's enum (0 none, 1 mean, 2 sum; 0 by default).
case("Torch.hinge_embedding_loss", T(2, 5, low=-1.5, high=2.5), V([[1.0, -1.0, 1.0, -1.0, -1.0]] * 2), 0.5, 2).constant(1)
case("Torch.margin_ranking_loss", T(6), T(6), V([1.0, -1.0, 1.0, 1.0, -1.0, -1.0]), 0.3, 0).constant(2)
case("Torch.kl_div", T(3, 4, low=-3.0, high=-0.1), T(3, 4, low=0.05, high=0.5))
case("Torch.hinge_embedding_loss", T(3, 4), V([[1.0, -1.0, 1.0, -1.0]] * 3)).constant(1)  # the default: none
case("Torch.binary_cross_entropy_with_logits", T(3, 4), T(3, 4, low=0.0, high=1.0))
case("Torch.kl_div", T(3, 4, low=-3.0, high=-0.1), T(3, 4, low=-3.0, high=-0.1), 2, log_target=True)
case("Torch.cosine_embedding_loss", T(4, 6), T(4, 6), V([1.0, -1.0, 1.0, -1.0]), 0.1, 0).constant(2)
case("Torch.triplet_margin_loss", T(4, 5), T(4, 5), T(4, 5), 1.0, 2.0, 1e-6, True, 1)
case("Torch.poisson_nll_loss", T(3, 4), T(3, 4, low=0.0, high=3.0), True, False, 1e-8, 1)
case("Torch.binary_cross_entropy_with_logits", T(3, 4), T(3, 4, low=0.0, high=1.0), None, T(4, low=0.5, high=2.0), 2).constant(3)
case("Torch.embedding", T(6, 3), V([[0, 2], [5, 2]], "int64"))
case("Torch.embedding", T(6, 3), V([[0, 2], [5, 2]], "int64"), 2)  # padding_idx: no gradient to row 2
case("Torch.embedding", T(6, 3), V([1, 5, 5], "int64"), -1, True)  # -1: no padding; scale_grad_by_freq
case("Torch.broadcast_tensors", T(3, 1), T(4), T(1, 1))
case("Torch.broadcast_tensors", I(2, 1), T(3))
case("Torch.block_diag", T(2, 3), T(1), V(4.0), T(3, 2))
case("Torch.block_diag", I(2, 2), T(1, 3))  # promoted

# --- MindSpore's reductions with `keepdims` (ms_reduce.rs), MindSpore itself the reference.
for _op in ["amax", "amin"]:
    ms_case(f"MS.Functional.{_op}", T(3, 4))
    ms_case(f"MS.Functional.{_op}", T(3, 4), 1, True)
    ms_case(f"MS.Functional.{_op}", T(2, 3, 4), axis=(0, 2), keepdims=True)
    ms_case(f"MS.Functional.{_op}", V([[1.0, 3.0, 3.0], [2.0, 2.0, 0.5]]), -1)  # ties share the gradient
for _op in ["nansum", "nanmean"]:
    ms_case(f"MS.Functional.{_op}", V([[1.0, math.nan, 2.5], [math.nan, -1.0, 4.0]]))
    ms_case(f"MS.Functional.{_op}", V([[1.0, math.nan, 2.5], [math.nan, -1.0, 4.0]]), 1, keepdims=True)
    ms_case(f"MS.Functional.{_op}", T(2, 3, 4), axis=(0, 2))
for _op in ["var_mean", "std_mean"]:
    ms_case(f"MS.Functional.{_op}", T(3, 4))
    ms_case(f"MS.Functional.{_op}", T(3, 5), 1, 1, True)
    ms_case(f"MS.Functional.{_op}", T(2, 3, 4), axis=(0, 2), ddof=1, keepdims=True)

# --- conv_tbc, lp_pool, the dropout family outside training, affine_grid (issue 38), appended last.
each(["Functional.conv_tbc", "Torch.conv_tbc"], T(7, 2, 3), T(3, 3, 4), T(4), 1)
case("Functional.conv_tbc", T(6, 1, 2), T(2, 2, 5), T(5))  # no padding
case("Functional.lp_pool1d", T(2, 3, 9), 2.0, 3)
case("Functional.lp_pool1d", T(3, 10, low=0.5, high=2.0), 3.0, 4, 2)  # unbatched, a stride, an odd power of positives
case("Functional.lp_pool2d", T(2, 3, 7, 6), 2, 3, 2)
case("Functional.lp_pool2d", T(2, 2, 6, 6, low=0.5, high=2.0), 1.5, (2, 3))
case("Functional.lp_pool2d", T(1, 2, 5, 5), 1, 2)  # p = 1: the window's sum
case("Torch.dropout", T(3, 4), 0.5, False)
case("Torch.dropout", T(3, 4), 0.0, True)
case("Torch.feature_dropout", T(2, 3, 4), 0.3, False)
each(["Functional.alpha_dropout", "Functional.feature_alpha_dropout"], T(2, 3, 4), 0.5)  # training=False by default
case("Functional.alpha_dropout", T(3, 4), 0.0, True)
each(["Torch.alpha_dropout", "Torch.feature_alpha_dropout"], T(2, 3, 4), 0.4, False)
case("Functional.affine_grid", T(2, 2, 3), [2, 3, 4, 5], align_corners=False)
case("Functional.affine_grid", T(1, 2, 3), [1, 1, 6, 3], align_corners=True)
case("Functional.affine_grid", T(2, 3, 4), [2, 1, 3, 4, 2], align_corners=False)
case("Torch.affine_grid_generator", T(2, 2, 3), [2, 3, 5, 4], True)
case("Functional.unfold", T(2, 3, 5, 6), 2)
case("Functional.unfold", T(3, 6, 5), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))  # unbatched
case("Functional.unfold", T(1, 2, 4, 4), 3, padding=2)  # padding beyond half the kernel
case("Functional.fold", T(2, 12, 20), (5, 6), 2)  # overlapping blocks summed
case("Functional.fold", T(18, 9), (5, 5), 3, padding=1, stride=2)  # unbatched
case("Functional.fold", T(1, 8, 8), [4, 6], (2, 2), dilation=(1, 2), stride=(2, 1))
case("Functional.triplet_margin_with_distance_loss", T(4, 5), T(4, 5), T(4, 5))
case("Functional.triplet_margin_with_distance_loss", T(3, 6), T(3, 6), T(3, 6), margin=2.5, swap=True, reduction="sum")
case("Functional.triplet_margin_with_distance_loss", T(6), T(6), T(6), margin=0.5, reduction="none")  # unbatched
# Special functions (ops/special.rs), at their poles' neighbours, reflections and asymptotic ranges.
case("Torch.lgamma", T(3, 4, low=0.1, high=5.0))
case("Torch.lgamma", V([-2.5, -0.5, 0.5, 1.0, 2.0, 30.0]))
case("Torch.digamma", T(3, 4, low=0.1, high=5.0))
case("Torch.digamma", V([-2.5, -0.3, 0.5, 1.0, 12.0, 100.0]))
case("Torch.polygamma", 0, T(2, 3, low=0.5, high=3.0))
case("Torch.polygamma", 1, T(3, 4, low=0.2, high=4.0))
case("Torch.polygamma", 3, V([-1.5, 0.5, 2.0, 15.0]))
case("Tensor.polygamma", T(3, 4, low=0.2, high=4.0), 2)
case("Torch.mvlgamma", T(3, 4, low=2.0, high=5.0), 3)
case("Torch.mvlgamma", T(4, low=1.0, high=3.0), p=1)
case("Torch.erfinv", T(3, 4, low=-0.95, high=0.95))
case("Torch.erfinv", V([-0.999999, -0.6, 0.0, 0.3, 0.75, 0.9999]))
case("Torch.i0", T(3, 4, low=-5.0, high=5.0))
case("Torch.i0", V([-40.0, -0.5, 0.0, 3.0, 80.0]))
case("Torch.angle", V([-2.0, 0.0, 3.5, -0.5]))
# Windows, range and triangle indices (ops/windows.rs).
case("Torch.hann_window", 8)
case("Torch.hann_window", 7, False, dtype=torch.float64)
case("Torch.hann_window", 1)
case("Torch.hamming_window", 9, dtype=torch.float64)
case("Torch.hamming_window", 6, False, 0.5, 0.5)
case("Torch.blackman_window", 10, dtype=torch.float64)
case("Torch.bartlett_window", 7, dtype=torch.float64)
case("Torch.bartlett_window", 6, False)
case("Torch.kaiser_window", 9, dtype=torch.float64)
case("Torch.kaiser_window", 8, False, 5.0, dtype=torch.float64)
case("Torch.range", 1.0, 4.0)
case("Torch.range", 0, 1, 0.25, dtype=torch.float64)
case("Torch.tril_indices", 3, 4)
case("Torch.tril_indices", 4, 3, -1)
case("Torch.triu_indices", 3, 5, 1)
# fill, resolve_neg, constant_pad_nd, dist, scalar_tensor.
case("Torch.fill", T(3, 4), 2.5)
case("Torch.fill", I(3, 4), 2.7)  # cast as torch casts: 2
case("Torch.resolve_neg", T(3, 4))
case("Tensor.resolve_neg", T(3, 4))
case("Torch.constant_pad_nd", T(2, 3, 4), [1, 2, 0, 1])
case("Torch.constant_pad_nd", T(2, 5), [-1, 2], 1.5)  # a crop and a fill
case("Torch.dist", T(3, 4), T(4))
case("Torch.dist", T(2, 3), T(2, 3), 3.0)
case("Torch.dist", V([1.0, 2.0]), V([1.0, 2.0]))  # zero distance: a zero gradient
case("Torch.scalar_tensor", 2.5)
case("Torch.scalar_tensor", 3, dtype=torch.float64)
# Vector and matrix compositions (ops/vector.rs).
case("Torch.cross", T(4, 3), T(4, 3))
case("Torch.cross", T(3, 5), T(3, 5), dim=0)
case("Torch.cross", T(2, 4, 3), T(1, 4, 3), dim=-1)  # broadcast
case("Torch.vecdot", T(3, 5), T(3, 5))
case("Torch.vecdot", T(4, 2), T(2), dim=-1)
case("Torch.chain_matmul", T(2, 3), T(3, 4), T(4, 2))
case("Torch.multi_dot", [T(3), T(3, 4), T(4, 5), T(5)])
case("Torch.multi_dot", [T(2, 3), T(3, 4)])
case("Torch.trapz", T(3, 5))
case("Torch.trapz", T(3, 5), T(5), dim=-1)
case("Torch.trapz", T(4, 2), dx=0.5, dim=0)
case("Torch.cumulative_trapezoid", T(3, 5))
case("Torch.cumulative_trapezoid", T(2, 4), T(2, 4))
case("Torch.cartesian_prod", T(3), T(2))
case("Torch.cartesian_prod", I(2), I(3), I(2))
case("Torch.combinations", T(4))
case("Torch.combinations", T(4), 3)
case("Torch.combinations", T(3), 2, True)
# Searches and membership (ops/search.rs).
case("Torch.searchsorted", V([-1.0, 0.0, 0.5, 2.0, 2.0, 3.0]), V([[-2.0, 2.0, 0.25], [3.0, 5.0, 0.0]]))
case("Torch.searchsorted", V([-1.0, 0.0, 0.5, 2.0, 2.0, 3.0]), V([2.0, -1.0, 9.0]), right=True)
case("Torch.searchsorted", V([[0.0, 1.0, 2.0], [-3.0, 0.0, 3.0]]), V([[1.0, 1.5], [0.0, 4.0]]), side="right", out_int32=True)
case("Torch.bucketize", V([[0.5, 2.0, -4.0], [3.0, 1.0, 9.0]]), V([0.0, 1.0, 2.0, 3.0]))
case("Torch.bucketize", V([1.0, 2.0, 3.5]), V([1.0, 2.0, 3.0]), right=True)
case("Torch.isin", V([[1.0, 2.0], [3.0, -0.0]]), V([0.0, 3.0, 7.0]))
case("Torch.isin", I(3, 4), I(5), invert=True)
# Casts, comparisons of whole tensors, frexp.
case("Tensor.short", V([1.0, -2.7, 300.0]))
case("Tensor.char", V([1.0, -2.7, 100.0]))
case("Tensor.byte", V([1.0, 2.7, 200.0]))
case("Tensor.allclose", V([1.0, 2.0]), V([1.0, 2.0 + 1e-9]))
case("Tensor.allclose", V([1.0, float("nan")]), V([1.0, float("nan")]), equal_nan=True)
case("Tensor.allclose", T(3, 4), T(4), rtol=0.5)
case("Torch.equal", V([1.0, 2.0]), V([1.0, 2.0]))
case("Torch.equal", V([1.0, float("nan")]), V([1.0, float("nan")]))
case("Torch.equal", T(2, 3), T(3))
case("Torch.frexp", V([0.0, 1.0, -3.5, 1e-310, 1e300, 0.75]))
case("Torch.frexp", T(3, 4, low=-100.0, high=100.0))
# Tensor methods (ops/methods.rs) and conj_physical of a real tensor.
case("Tensor.adjoint", T(2, 3, 4))
case("Tensor.sum_to_size", T(2, 3, 4), 3, 1)
case("Tensor.sum_to_size", T(2, 3), 1, 3)
case("Tensor.isreal", T(3, 4))
case("Tensor.conj_physical", T(3, 4))
# trace, queries, new_ones/new_zeros, conj and positive of a real tensor, is_nonzero.
case("Torch.trace", T(3, 3))
case("Torch.trace", T(2, 4))
case("Torch.trace", I(4, 3))  # int64
case("Torch.numel", T(2, 3, 4))
case("Tensor.nelement", T(0, 3))
case("Torch.is_complex", T(3))
case("Tensor.is_signed", T(3))
case("Tensor.is_signed", I(3, low=0, high=4, dtype="uint8"))
case("Torch.is_tensor", T(3))
case("Torch.is_tensor", 3)
case("Tensor.new_ones", I(2, 3), [3, 4])
case("Tensor.new_ones", T(2), 2, 3)
case("Tensor.new_zeros", T(2), [4], dtype=torch.int32)
case("Torch.conj", T(3, 4))
case("Torch.positive", T(3, 4))
case("Torch.is_nonzero", V([0.5]))
case("Torch.is_nonzero", V([[0]], "int64"))
# Square matrices (ops/linalg.rs): well-conditioned (a random matrix plus a diagonal), a singular
# one, a negative determinant, batches, empty matrices. The singular one has a zero row: its LU is
# exact on any CPU, so torch's determinant is exactly 0 everywhere (rows in proportion, [1, 2, 3]
# and [2, 4, 6], left torch's LU a rounding of -6.7e-16 on an AVX-512 machine and 0 on others).
_SPD = V([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
_SINGULAR = V([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [1.0, 0.0, 1.0]])
_NEGATIVE = V([[0.0, 2.0, 1.0], [1.0, 0.5, 0.0], [0.3, 0.0, 3.0]])
case("Torch.det", _SPD)
case("Torch.det", T(2, 4, 4, low=-1.0, high=1.0))
case("Torch.det", _SINGULAR)
case("Torch.det", T(3, 0, 0))
case("Torch.slogdet", _NEGATIVE)
case("Torch.slogdet", T(2, 3, 3, low=-1.0, high=1.0))
case("Torch.logdet", _SPD)
case("Torch.logdet", _NEGATIVE)
case("Torch.inverse", _SPD)
case("Torch.inverse", T(2, 4, 4, low=-1.0, high=1.0))
case("Torch.inv", T(3, 3, low=-1.0, high=1.0))
case("Torch.inv_ex", T(2, 3, 3, low=-1.0, high=1.0))
case("Torch.matrix_power", T(3, 3, low=-1.0, high=1.0), 3)
case("Torch.matrix_power", T(2, 3, 3, low=-1.0, high=1.0), 0)
case("Torch.matrix_power", _SPD, -2)
case("Torch.solve_ex", _SPD, T(3, 2))
case("Torch.solve_ex", T(2, 3, 3, low=-1.0, high=1.0), T(2, 3))  # a batch of vectors
case("Torch.solve_ex", _SPD, T(3))
case("Torch.solve_ex", _SPD, T(2, 3), left=False)
# 3-D convolutions and adaptive pooling (ops/conv.rs: the depth taps' 2-D convolutions summed).
case("Functional.conv3d", T(2, 3, 5, 6, 5), T(4, 3, 2, 3, 2), T(4))
case("Torch.conv3d", T(1, 4, 4, 5, 5), T(4, 2, 3, 3, 3), None, 2, 1, 1, 2)  # stride, padding, groups
case("Functional.conv3d", T(1, 2, 7, 7, 7), T(3, 2, 2, 2, 2), None, 1, 0, 2)  # dilation
case("Functional.conv3d", T(2, 5, 4, 5), T(3, 2, 2, 2, 2), padding="same")  # unbatched
case("Functional.conv_transpose3d", T(1, 3, 3, 4, 3), T(3, 2, 2, 2, 2), T(2), 2)
case("Torch.conv_transpose3d", T(2, 2, 3, 3, 3), T(2, 4, 3, 3, 3), None, 1, 1)
case("Functional.adaptive_avg_pool3d", T(2, 3, 5, 6, 7), (2, 3, 4))
case("Functional.adaptive_avg_pool3d", T(3, 4, 4, 4), 2)
case("Torch._adaptive_avg_pool2d", T(2, 3, 7, 6), [3, 2])
# ATen's functions under torch (ops/aten.rs), ATen's signatures of public functions.
# _add_relu: torch defines no derivative, so forward only; the in-place form on a copy.
_add_relu_ = Case("Torch._add_relu_", (T(3, 4), T(4)), {}, lambda x, o, **kw: torch._add_relu_(x.clone(), o, **kw))
CASES.append(_add_relu_)
for _c in [case("Torch._add_relu", T(3, 4), T(4)), case("Torch._add_relu", T(3, 4), T(3, 4), alpha=2.0), _add_relu_]:
    _c.backward = False
for _c in [case("Torch._aminmax", T(3, 4)), case("Torch._aminmax", T(3, 4), 1), case("Torch._aminmax", T(3, 4), 0, True)]:
    _c.backward = False  # no derivative in torch
case("Torch._softmax_backward_data", T(3, 4), T(3, 4, low=0.0, high=1.0), 1, torch.float64)
case("Torch.real", T(3, 4))
case("Torch.frobenius_norm", T(2, 3, 4), [1, 2])
case("Torch.frobenius_norm", T(2, 3, 4), [1], True)
case("Torch.norm_except_dim", T(4, 3, 2), 2, 0)
case("Torch.norm_except_dim", T(4, 3, 2), 3, 2)
case("Torch.norm_except_dim", T(4, 3), 2, -1)
case("Torch.instance_norm", T(2, 3, 5), T(3), T(3), None, None, True, 0.1, 1e-5, False)
case("Torch.instance_norm", T(2, 3, 5), None, None, T(3), T(3, low=0.5), False, 0.1, 1e-5, False).constant(3, 4)
case("Torch.lstm", T(2, 3, 5), [T(1, 2, 3), T(1, 2, 3)], [T(12, 5), T(12, 3), T(12), T(12)], True, 1, 0.0, False, False, True)
case("Torch.gru", T(5, 2, 3), T(1, 2, 4), [T(12, 3), T(12, 4), T(12), T(12)], True, 1, 0.0, False, False, False)
case("Torch.lstm_cell", T(3, 5), [T(3, 4), T(3, 4)], T(16, 5), T(16, 4), T(16), T(16))
case("Torch.lstm_cell", T(2, 5), [T(2, 4), T(2, 4)], T(16, 5), T(16, 4))  # no biases
case("Torch.gru_cell", T(3, 5), T(3, 4), T(12, 5), T(12, 4), T(12), T(12))
case("Torch.convolution", T(2, 3, 7, 6), T(4, 3, 3, 3), T(4), [1, 1], [1, 0], [1, 1], False, [0, 0], 1)
case("Torch.convolution", T(2, 4, 5, 5), T(4, 2, 3, 3), None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1)  # transposed
case("Torch._convolution", T(2, 3, 9), T(4, 3, 3), T(4), [2], [1], [1], False, [0], 1, False, False, True, True)
case("Torch.native_layer_norm", T(2, 3, 4), [4], T(4), T(4), 1e-5)
case("Torch.native_layer_norm", T(2, 3, 4), [3, 4], None, None, 1e-5)
case("Torch.native_group_norm", T(2, 6, 5), T(6), T(6), 2, 6, 5, 3, 1e-5)
case("Torch.native_group_norm", T(2, 4, 3, 3), None, None, 2, 4, 9, 2, 1e-5)
case("Torch.native_batch_norm", T(4, 3, 5), T(3), T(3), None, None, True, 0.1, 1e-5)
case("Torch.native_batch_norm", T(4, 3, 5), T(3), T(3), T(3), T(3, low=0.5), False, 0.1, 1e-3).constant(3, 4)
# Order statistics (ops/order_stats.rs): no ties where an index is returned (a tie is a skip).
_NAN = float("nan")
case("Torch.median", T(3, 5))
case("Torch.median", V([[1.0, 2.0], [2.0, 3.0]]))  # a tie: the gradient split evenly
case("Torch.median", V([1.0, _NAN, 2.0]))
case("Torch.median", T(3, 4), 1)
case("Torch.median", T(3, 4), 0, True)
case("Torch.median", V([[1.0, _NAN, 2.0], [3.0, 1.0, 2.0]]), 1)
case("Torch.nanmedian", V([[1.0, _NAN, 2.0, 4.0], [0.5, 3.0, 2.0, 1.0]]), 1)
case("Torch.nanmedian", V([1.0, _NAN, 3.0, 7.0]))
case("Torch.kthvalue", T(3, 5), 2)
case("Torch.kthvalue", T(4, 3), 1, 0, True)
case("Torch.quantile", T(3, 5), 0.3)
case("Torch.quantile", T(3, 5), V([0.1, 0.5, 0.9]), 1).constant(1)
case("Torch.quantile", T(4, 3), 0.25, 0, True, interpolation="lower")
case("Torch.quantile", T(4, 3), 0.4, 0, interpolation="higher")
case("Torch.quantile", T(4, 6), 0.5, 1, interpolation="nearest")
case("Torch.quantile", T(4, 6), 0.3, -1, True, interpolation="midpoint")
case("Torch.quantile", V([[1.0, _NAN, 2.0], [3.0, 1.0, 2.0]]), 0.5, 1)
case("Torch.nanquantile", V([[1.0, _NAN, 2.0, 5.0], [3.0, 1.0, 2.0, 0.0]]), V([0.2, 0.7]), 1).constant(1)
case("Torch.nanquantile", V([_NAN, 1.0, 2.0]), 0.5)
# Writes at computed positions (ops/scatter.rs).
case("Torch.slice_scatter", T(4, 5), T(2, 5), 0, 1, 3)
case("Torch.slice_scatter", T(4, 6), T(4, 3), 1, 0, None, 2)
case("Torch.slice_scatter", T(3, 4), T(3, 2), dim=1, start=-2)
case("Torch.diagonal_scatter", T(3, 4), T(3))
case("Torch.diagonal_scatter", T(3, 4), T(2), 2)
case("Torch.diagonal_scatter", T(3, 4), T(2), -1)
case("Torch.diagonal_scatter", T(2, 3, 3), T(2, 3), 0, 1, 2)
case("Torch.masked_scatter", T(3, 4), B(3, 4), T(12))
case("Torch.masked_scatter", T(3, 4), B(4), T(3, 4))
case("Torch.index_put", T(5, 3), [V([0, 2, 4], "int64")], T(3, 3))
case("Torch.index_put", T(5, 3), [V([1, 3], "int64"), V([0, -1], "int64")], T(2))
case("Torch.index_put", T(5, 3), [V([1, 1, 4], "int64")], T(3, 3), True)  # accumulate, a repeated row
case("Torch.index_put", T(3, 4), [B(3, 4)], V(2.5))
case("Torch.put", T(3, 4), V([0, 5, -1], "int64"), T(3))
case("Torch.put", T(3, 4), V([1, 1, 2], "int64"), T(3), True)
case("Tensor.fill_diagonal_", T(3, 4), 2.5)
case("Tensor.fill_diagonal_", T(7, 3), 1.0, True)
case("Tensor.fill_diagonal_", T(3, 3, 3), -1.0)
# renorm, cov, corrcoef.
case("Torch.renorm", T(4, 3), 2, 0, 1.0)
case("Torch.renorm", T(2, 3, 4), 1.5, 1, 2.0)
case("Torch.renorm", T(3, 5), 3, -1, 100.0)  # nothing above maxnorm
case("Torch.cov", T(3, 6))
case("Torch.cov", T(6), correction=0)
case("Torch.cov", T(2, 5), fweights=V([1, 2, 1, 3, 1], "int64"), aweights=T(5, low=0.1, high=1.0)).constant("aweights")
case("Torch.cov", T(3, 4), aweights=T(4, low=0.1, high=1.0), correction=2).constant("aweights")
case("Torch.corrcoef", T(3, 6))
case("Torch.corrcoef", T(5)).backward = False  # 1: its gradient is zero, torch's c/c rounding noise
# igamma / igammac: torch differentiates the second argument only.
case("Torch.igamma", T(3, 4, low=0.1, high=6.0), T(3, 4, low=0.0, high=9.0)).constant(0)
# Broadcast, the continued fraction; a below 20, where torch switches to Temme's asymptotic
# expansion, which is off mpmath by up to 2e-9 relative (a = 23, x = 17.7); ours within 1e-14.
case("Torch.igamma", T(3, 1, low=0.5, high=15.0), T(4, low=10.0, high=40.0)).constant(0)
case("Torch.igamma", V([0.0, 1.0, 2.0, 0.5, 3.0]), V([1.0, 0.0, float("inf"), 0.3, 1e-3])).constant(0)
case("Torch.igammac", T(3, 4, low=0.1, high=6.0), T(3, 4, low=0.0, high=9.0)).constant(0)
case("Torch.igammac", V([0.0, 1.0, 2.0, 100.0]), V([2.0, 0.0, float("inf"), 90.0])).constant(0)
# 3-D pooling and unpooling (ops/pool3d.rs).
case("Functional.max_pool3d", T(2, 3, 5, 6, 5), 2)
case("Functional.max_pool3d", T(1, 2, 6, 7, 6), (2, 3, 2), (2, 2, 1), (1, 1, 0), ceil_mode=True)
case("Functional.max_pool3d", T(2, 4, 7, 7, 7), 3, 2, 1, 2)  # dilation
case("Functional.max_pool3d", T(3, 4, 4, 4), 2)  # unbatched
case("Torch.max_pool3d", T(2, 3, 4, 4, 4), [2, 2, 2], [], 0, 1, False)
case("Functional.max_pool3d_with_indices", T(2, 2, 4, 5, 4), 2, 1)
case("Functional.avg_pool3d", T(2, 3, 5, 6, 5), 2)
case("Functional.avg_pool3d", T(1, 2, 6, 7, 6), 3, 2, 1, True, False)
case("Functional.avg_pool3d", T(1, 2, 4, 4, 4), 2, divisor_override=3)
case("Functional.avg_pool3d", T(2, 2, 5, 5, 5), 3, 2, 1)
case("Functional.lp_pool3d", T(2, 3, 4, 6, 4, low=0.1, high=2.0), 2.0, 2)
case("Functional.lp_pool3d", T(1, 2, 5, 5, 5, low=0.1, high=2.0), 1.5, (2, 3, 2), (1, 2, 1), ceil_mode=True)
case("Functional.adaptive_max_pool3d", T(2, 3, 5, 7, 6), (2, 3, 4))
case("Functional.adaptive_max_pool3d", T(3, 5, 5, 5), 2)
case("Functional.adaptive_max_pool3d_with_indices", T(1, 2, 6, 5, 4), (3, None, 2))
case("Functional.max_unpool1d", T(2, 3), V([[0, 3, 4], [1, 2, 5]], "int64"), 2)
case("Functional.max_unpool2d", T(1, 1, 2, 2), V([[[[0, 3], [9, 14]]]], "int64"), 2)
case("Functional.max_unpool2d", T(1, 1, 2, 2), V([[[[0, 3], [9, 24]]]], "int64"), 2, output_size=[5, 5])
case("Functional.max_unpool3d", T(1, 1, 1, 1, 2), V([[[[[1, 6]]]]], "int64"), 2)
# SyncBatchNorm's kernels (ops/syncbn.rs): CUDA-only in torch except update_stats, so their
# references are torch compositions of the CUDA kernels' formulas; forward only (SyncBatchNorm
# calls them inside its own autograd function).
_CH = [1, -1, 1]


def _bn_stats(x, eps):
    dims = [0] + list(range(2, x.dim()))
    return x.mean(dims), 1 / torch.sqrt(x.var(dims, unbiased=False) + eps)


def _bn_gather(x, mean, invstd, running_mean, running_var, momentum, eps, counts):
    n = counts.to(mean.dtype).unsqueeze(1)
    m = (mean * n).sum(0) / n.sum()
    var = ((1 / invstd**2 - eps + (mean - m) ** 2) * n).sum(0) / n.sum()
    return m, 1 / torch.sqrt(var + eps)


def _bn_gather_equal(x, mean, invstd, running_mean, running_var, momentum, eps, count):
    counts = torch.full((mean.shape[0],), float(count), dtype=mean.dtype)
    return _bn_gather(x, mean, invstd, running_mean, running_var, momentum, eps, counts)


def _bn_elemt(x, weight, bias, mean, invstd, eps):
    y = (x - mean.view(_CH)) * invstd.view(_CH)
    y = y if weight is None else y * weight.view(_CH)
    return y if bias is None else y + bias.view(_CH)


def _bn_backward_reduce(g, x, mean, invstd, weight, input_g, weight_g, bias_g):
    sum_dy, sum_dy_xmu = g.sum((0, 2)), (g * (x - mean.view(_CH))).sum((0, 2))
    return (sum_dy if input_g else None, sum_dy_xmu if input_g else None,
            sum_dy_xmu * invstd if weight_g else None, sum_dy if bias_g else None)


def _bn_backward_elemt(g, x, mean, invstd, weight, sum_dy, sum_dy_xmu, count):
    n = count.sum().to(g.dtype)
    f1 = invstd**2 * sum_dy_xmu / n
    f2 = invstd if weight is None else invstd * weight
    return (g - (sum_dy / n).view(_CH) - (x - mean.view(_CH)) * f1.view(_CH)) * f2.view(_CH)


for _c in [
    Case("Torch.batch_norm_stats", (T(4, 3, 5), 1e-5), {}, _bn_stats),
    case("Torch.batch_norm_update_stats", T(4, 3, 5), None, None, 0.1),
    Case("Torch.batch_norm_gather_stats_with_counts",
         (T(4, 3, 5), T(2, 3), T(2, 3, low=0.5, high=2.0), None, None, 0.1, 1e-5, V([20.0, 12.0])), {}, _bn_gather),
    Case("Torch.batch_norm_gather_stats",
         (T(4, 3, 5), T(3, 3), T(3, 3, low=0.5, high=2.0), None, None, 0.1, 1e-5, 20), {}, _bn_gather_equal),
    Case("Torch.batch_norm_elemt", (T(4, 3, 5), T(3), T(3), T(3), T(3, low=0.5, high=2.0), 1e-5), {}, _bn_elemt),
    Case("Torch.batch_norm_elemt", (T(4, 3, 5), None, None, T(3), T(3, low=0.5, high=2.0), 1e-5), {}, _bn_elemt),
    Case("Torch.batch_norm_backward_reduce", (T(4, 3, 5), T(4, 3, 5), T(3), T(3, low=0.5, high=2.0), T(3), True, True, True), {},
         _bn_backward_reduce),
    Case("Torch.batch_norm_backward_reduce", (T(4, 3, 5), T(4, 3, 5), T(3), T(3, low=0.5, high=2.0), None, True, False, False), {},
         _bn_backward_reduce),
    Case("Torch.batch_norm_backward_elemt",
         (T(4, 3, 5), T(4, 3, 5), T(3), T(3, low=0.5, high=2.0), T(3), T(3), T(3), V([12, 8], "int32")), {}, _bn_backward_elemt),
]:
    if _c not in CASES:
        CASES.append(_c)
    _c.backward = False
# Triangular factors (ops/factor.rs).
_SPD4 = V([[5.0, 1.0, 0.5, 0.2], [1.0, 4.0, 0.3, 0.1], [0.5, 0.3, 3.0, 0.4], [0.2, 0.1, 0.4, 2.0]])
case("Torch.cholesky_ex", _SPD4)
case("Torch.cholesky_ex", _SPD4, upper=True)
case("Torch.cholesky_inverse", V([[2.0, 0.0, 0.0], [0.5, 1.5, 0.0], [0.3, -0.2, 1.2]]))
case("Torch.cholesky_inverse", V([[2.0, 0.5, 0.3], [0.0, 1.5, -0.2], [0.0, 0.0, 1.2]]), True)
case("Torch.cholesky_solve", T(3, 2), V([[2.0, 0.0, 0.0], [0.5, 1.5, 0.0], [0.3, -0.2, 1.2]]))
case("Torch.triangular_solve", T(3, 2), V([[2.0, 0.4, -0.3], [0.7, 1.5, 0.2], [0.3, -0.2, 1.2]]))
case("Torch.triangular_solve", T(2, 3, 2), T(2, 3, 3, low=0.5, high=1.5), False, True)  # lower, transposed
case("Torch.triangular_solve", T(3, 1), V([[2.0, 0.4, -0.3], [0.7, 1.5, 0.2], [0.3, -0.2, 1.2]]), unitriangular=True)
case("Torch.lu_unpack", T(3, 3), V([2, 3, 3], "int32"))
case("Torch.lu_unpack", T(2, 4, 3), V([[4, 2, 3], [1, 3, 3]], "int32"))
case("Torch.lu_unpack", T(3, 4), V([3, 2, 3], "int32"), unpack_pivots=False)
case("Torch.lu_solve", T(3, 2), V([[2.0, 0.4, -0.3], [0.3, 1.5, 0.2], [0.1, -0.2, 1.2]]), V([2, 2, 3], "int32"))
case("Torch.matrix_exp", T(3, 3))
case("Torch.matrix_exp", T(2, 4, 4, low=-3.0, high=3.0))
case("Torch.matrix_exp", V([[0.0, 0.0], [0.0, 0.0]]))
# Singular values (ops/svd.rs): distinct ones, so that the gradient is defined.
case("Torch.svdvals", T(4, 3))
case("Torch.svdvals", T(2, 3, 5))
case("Torch.matrix_norm", T(3, 4))
case("Torch.matrix_norm", T(2, 3, 4), "nuc")
case("Torch.matrix_norm", T(3, 4), 2)
case("Torch.matrix_norm", T(4, 3), -2, keepdim=True)
case("Torch.matrix_norm", T(3, 4), 1)
case("Torch.matrix_norm", T(3, 4), float("-inf"))
case("Torch.matrix_norm", T(3, 4, 2), float("inf"), (0, 1))
case("Torch.nuclear_norm", T(3, 5))
case("Torch.nuclear_norm", T(3, 4, 2), [0, 2], True)
case("Torch.cond", T(4, 4))
case("Torch.cond", T(3, 5), -2)
# torch's cond for p other than ±2 cannot differentiate (its inverse is modified in place).
case("Torch.cond", _SPD4, "fro").backward = False
case("Torch.cond", _SPD4, 1).backward = False
for _c in [case("Torch.matrix_rank", T(4, 3)), case("Torch.matrix_rank", V([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]])),
           case("Torch.matrix_rank", T(2, 3, 3), atol=0.5), case("Torch.matrix_rank", _SPD4, hermitian=True)]:
    _c.backward = False
# Runs, embedding_renorm_, tensorsolve, Householder reflectors.
case("Torch.unique_consecutive", V([1, 1, 2, 2, 3, 1, 1, 2], "int64"), True, True)
case("Torch.unique_consecutive", V([[1.0, 1.0], [1.0, 1.0], [2.0, 3.0]]), return_counts=True, dim=0).backward = False
case("Torch.unique_consecutive", V([0.5, 0.5, float("nan"), float("nan"), 2.0])).backward = False
case("Torch.embedding_renorm_", T(5, 3, low=-2.0, high=2.0), V([0, 2, 2, 4], "int64"), 1.0, 2.0).backward = False
case("Torch.tensorsolve", T(6, 2, 3), T(6))
case("Torch.tensorsolve", T(2, 2, 2, 2), T(2, 2), dims=(0,))
case("Torch.householder_product", T(4, 3), T(3, low=0.5, high=1.5))
case("Torch.householder_product", T(2, 5, 3), T(2, 2, low=0.5, high=1.5))
case("Torch.orgqr", T(4, 3), T(3, low=0.5, high=1.5))
case("Torch.ormqr", T(4, 3), T(3, low=0.5, high=1.5), T(4, 2))
case("Torch.ormqr", T(4, 3), T(3, low=0.5, high=1.5), T(2, 4), False, True)
# LU (ops/factor.rs): square, pivoted as LAPACK's getrf.
case("Torch.lu_factor", T(4, 4))
case("Torch.lu_factor", T(2, 3, 3))
case("Torch.lu_factor_ex", T(3, 3))
case("Torch.lu", T(4, 4))
case("Torch.lu", T(2, 3, 3))
case("Tensor.lu", T(3, 3))
case("Tensor.lu", T(2, 4, 4), get_infos=True)


# ---------------------------------------------------------------- MindSpore's own spellings
# mindspore.ops functions and Tensor methods that are a torch entry under
# MindSpore's parameter names (`axis`, `keep_dims`, `x` and `input_x` bind as
# torch's), each against MindSpore itself. Some of MindSpore's CPU kernels
# take no float64: those cases are float32.


def T32(*shape, low=-2.0, high=2.0):
    """A random float32 tensor (a MindSpore CPU kernel without float64)."""
    return Rand(shape, "float32", low, high)


ms_case("MS.Functional.add", T(3, 4), T(3, 4))
ms_case("MS.Functional.add", T(2, 3, 4), T(4))
ms_case("MS.Functional.add", T(3), 1.5)
ms_case("MS.Functional.sub", T(3, 4), T(1, 4))
ms_case("MS.Functional.sub", T(3), 2.0)
ms_case("MS.Functional.true_divide", T(3, 4), T(3, 4, low=0.5, high=2.0))
ms_case("MS.Functional.floor_div", T(3, 4), T(3, 4, low=0.5, high=2.0)).backward = False
ms_case("MS.Functional.floor_div", I(3, 4, low=-9, high=9), I(3, 4, low=1, high=4))
ms_case("MS.Functional.floor_mod", T(3, 4), T(3, 4, low=0.5, high=2.0))
ms_case("MS.Functional.floor_mod", I(3, 4, low=-9, high=9), I(3, 4, low=1, high=4))
ms_case("MS.Functional.maximum", T(3, 4), T(3, 4))
ms_case("MS.Functional.maximum", T(2, 3), T(3))
ms_case("MS.Functional.minimum", T(3, 4), T(3, 4))
ms_case("MS.Functional.equal", I(3, 4, high=3), I(3, 4, high=3))
ms_case("MS.Functional.equal", T(3, 4), 0.5)
ms_case("MS.Functional.inv", T(3, 4, low=0.5, high=2.0))
ms_case("MS.Functional.invert", I(3, 4, low=-9, high=9))
ms_case("MS.Functional.digamma", T(3, 4, low=0.5, high=4.0))
ms_case("MS.Functional.erfinv", T(3, 4, low=-0.9, high=0.9))
ms_case("MS.Functional.xlogy", T(3, 4), T(3, 4, low=0.5, high=3.0))
ms_case("MS.Functional.lerp", T32(3, 4), T32(3, 4), 0.3)
ms_case("MS.Functional.lerp", T32(3, 4), T32(3, 4), T32(3, 4, low=0.0, high=1.0))
ms_case("MS.Functional.round", T(3, 4, low=-5.0, high=5.0))
ms_case("MS.Functional.signbit", T(3, 4))
ms_case("MS.Functional.igamma", T(3, 4, low=0.5, high=3.0), T(3, 4, low=0.5, high=3.0)).constant(0)
ms_case("MS.Functional.igammac", T(3, 4, low=0.5, high=3.0), T(3, 4, low=0.5, high=3.0)).constant(0)
ms_case("MS.Functional.diff", T(3, 5))
ms_case("MS.Functional.diff", T(3, 5), 1, 0)
ms_case("MS.Functional.diff", T(3, 5), axis=-1, prepend=T(3, 1), append=T(3, 2))
ms_case("MS.Functional.rot90", T(3, 4), 1, (0, 1))
ms_case("MS.Functional.rot90", T(2, 3, 4), 3, [1, 2])
ms_case("MS.Functional.any", B(3, 4))
ms_case("MS.Functional.any", B(3, 4), 1)
ms_case("MS.Functional.any", B(2, 3, 4), (0, 2), True)
ms_case("MS.Functional.cumprod", T(3, 4), 1)
ms_case("MS.Functional.cumprod", T(3, 4), 0)
ms_case("MS.Functional.logsumexp", T(3, 4), 1)
ms_case("MS.Functional.logsumexp", T(2, 3, 4), (0, 2), True)
ms_case("MS.Functional.mean", T(3, 4))
ms_case("MS.Functional.mean", T(3, 4), 1)
ms_case("MS.Functional.mean", T(2, 3, 4), (0, 2), True)
ms_case("MS.Functional.mean", T(2, 3, 4), axis=-1, keep_dims=True)
ms_case("MS.Functional.tensor_dot", T(3, 4, 5), T(4, 5, 2), 2)
ms_case("MS.Functional.tensor_dot", T(3, 4), T(5, 4), ((1,), (1,)))
ms_case("MS.Functional.full", (2, 3), 1.5, dtype=torch.float32).backward = False
ms_case("MS.Functional.full", (2, 3), 2, dtype=torch.int32).backward = False
ms_case("MS.Functional.full_like", T(2, 3), 0.5).backward = False
ms_case("MS.Functional.ones_like", T(2, 3)).backward = False
ms_case("MS.Functional.ones_like", T(2, 3), dtype=torch.int32).backward = False
ms_case("MS.Functional.zeros_like", T(2, 3)).backward = False
ms_case("MS.Functional.ones", (2, 3)).backward = False
ms_case("MS.Functional.ones", (2, 3), torch.float64).backward = False
ms_case("MS.Functional.linspace", 0.0, 1.0, 5).backward = False
ms_case("MS.Functional.logspace", 0.0, 2.0, 5).backward = False
ms_case("MS.Functional.range", 0, 10, 3).backward = False
ms_case("MS.Functional.range", 0.5, 3.0, 0.5).backward = False
ms_case("MS.Functional.deepcopy", T(3, 4))
ms_case("MS.Functional.diag", T(4))
ms_case("MS.Functional.expand_dims", T(3, 4), 1)
ms_case("MS.Functional.expand_dims", T(3, 4), -1)
ms_case("MS.Functional.gather_d", T(3, 4), 1, I(3, 2, high=4))
ms_case("MS.Functional.gather_elements", T(3, 4), 0, I(2, 4, high=3))
ms_case("MS.Functional.hsplit", T(3, 6), 3)
ms_case("MS.Functional.hsplit", T(3, 6), [1, 4])
ms_case("MS.Functional.index_fill", T32(3, 4), 1, V([0, 2], "int32"), 1.5)
ms_case("MS.Functional.narrow", T(4, 5), 1, 1, 3)
ms_case("MS.Functional.narrow", T(4, 5), 0, 0, 2)
ms_case("MS.Functional.nan_to_num", V([1.0, float("nan"), float("inf"), -float("inf"), 2.0], "float32"), 0.0, 100.0, -100.0)
# No CPU kernel of MindSpore's nonzero and roll: torch's function, which MindSpore documents them as.
CASES.append(Case("MS.Functional.nonzero", (I(3, 4, high=2),), {}, torch.nonzero))
CASES.append(Case("MS.Functional.nonzero", (I(3, 4, high=2),), {"as_tuple": True}, torch.nonzero))
ms_case("MS.Functional.repeat_elements", T(2, 3), 2)
ms_case("MS.Functional.repeat_elements", T(2, 3), 3, 1)
ms_case("MS.Functional.reverse", T(3, 4), [1])
ms_case("MS.Functional.reverse", T(2, 3, 4), [0, 2])
CASES.append(Case("MS.Functional.roll", (T(3, 4), 1, 0), {}, torch.roll))
CASES.append(Case("MS.Functional.roll", (T(3, 4), (1, -2), (0, 1)), {}, torch.roll))
ms_case("MS.Functional.scatter", T(3, 4), 1, V([[0, 1], [2, 3], [1, 0]], "int64"), T(3, 2))
ms_case("MS.Functional.select", B(3, 4), T(3, 4), T(3, 4))
ms_case("MS.Functional.size", T(3, 4))
ms_case("MS.Functional.tile", T(2, 3), (2, 2))
ms_case("MS.Functional.transpose", T(2, 3, 4), (2, 0, 1))
ms_case("MS.Functional.permute", T(2, 3, 4), (1, 2, 0))
ms_case("MS.Functional.unique_consecutive", V([1, 1, 2, 2, 3, 1, 1, 2], "int64"), True, True)
ms_case("MS.Functional.unstack", T(3, 4))
ms_case("MS.Functional.unstack", T(3, 4), 1)
ms_case("MS.Functional.cross", T(4, 3), T(4, 3))
ms_case("MS.Functional.cross", T(3, 5), T(3, 5), 0)
ms_case("MS.Functional.renorm", T32(3, 4), 2, 0, 1.0)
ms_case("MS.Functional.clip_by_value", T(3, 4), -0.5, 0.5)
ms_case("MS.Functional.clip_by_value", T(3, 4), T(3, 4, low=-2.0, high=-0.5), T(3, 4, low=0.5, high=2.0))
ms_case("MS.Functional.addmv", T(3), T(3, 4), T(4))
ms_case("MS.Functional.addmv", T(3), T(3, 4), T(4), beta=0.5, alpha=2.0)
ms_case("MS.Functional.logdet", V([[2.0, 0.5, 0.1], [0.3, 3.0, 0.2], [0.1, 0.4, 1.5]]))
ms_case("MS.Functional.cdist", T(2, 3, 4), T(2, 5, 4))
ms_case("MS.Functional.dist", T32(3, 4), T32(3, 4))
ms_case("MS.Functional.dist", T32(3, 4), T32(3, 4), 1)
ms_case("MS.Tensor.addmv", T(3), T(3, 4), T(4))
ms_case("MS.Tensor.any", B(3, 4), 1)
ms_case("MS.Tensor.cross", T(4, 3), T(4, 3))
ms_case("MS.Tensor.cumprod", T(3, 4), 1)
ms_case("MS.Tensor.diag", T(4))
ms_case("MS.Tensor.diff", T(3, 5))
ms_case("MS.Tensor.digamma", T(3, 4, low=0.5, high=4.0))
ms_case("MS.Tensor.equal", T(3, 4), T(3, 4))
ms_case("MS.Tensor.erfinv", T(3, 4, low=-0.9, high=0.9))
ms_case("MS.Tensor.gather_elements", T(3, 4), 1, I(3, 2, high=4))
ms_case("MS.Tensor.igamma", T(3, 4, low=0.5, high=3.0), T(3, 4, low=0.5, high=3.0)).constant(0)
ms_case("MS.Tensor.igammac", T(3, 4, low=0.5, high=3.0), T(3, 4, low=0.5, high=3.0)).constant(0)
ms_case("MS.Tensor.index_fill", T32(3, 4), 1, V([0, 2], "int32"), 1.5)
ms_case("MS.Tensor.logdet", V([[2.0, 0.5], [0.3, 3.0]]))
ms_case("MS.Tensor.nan_to_num", V([1.0, float("nan"), float("inf"), 2.0], "float32"), 0.0)
ms_case("MS.Tensor.nonzero", I(3, 4, high=2))
ms_case("MS.Tensor.renorm", T32(3, 4), 2, 0, 1.0)
ms_case("MS.Tensor.rot90", T(3, 4), 1, (0, 1))
ms_case("MS.Tensor.round", T(3, 4, low=-5.0, high=5.0))
ms_case("MS.Tensor.signbit", T(3, 4))
ms_case("MS.Tensor.swapdims", T(2, 3, 4), 0, 2)
ms_case("MS.Functional.swapdims", T(2, 3, 4), 2, 1)
ms_case("MS.Functional.zeros", (2, 3), torch.int32).backward = False
ms_case("MS.Functional.zeros", [4]).backward = False
ms_case("MS.Tensor.tile", T(2, 3), (2, 1))
ms_case("MS.Tensor.xlogy", T(3, 4), T(3, 4, low=0.5, high=3.0))
ms_case("MS.Tensor.unique_consecutive", V([1, 1, 2, 2, 3, 1, 1, 2], "int64"), True, True)
ms_case("MS.Tensor.copy", T(3, 4))
ms_case("MS.Tensor.hardshrink", T32(3, 4), 0.5)
# MindSpore's functions that are torch's under other arguments (ops/ms_torch.rs).
ms_case("MS.Functional.flatten", T(2, 3, 4))
ms_case("MS.Functional.flatten", T(2, 3, 4, 5), start_dim=2)
ms_case("MS.Functional.flatten", T(2, 3, 4), start_dim=0, end_dim=1)
ms_case("MS.Functional.argmin", T(3, 4))
ms_case("MS.Functional.argmin", T(3, 4), 1)
ms_case("MS.Functional.argmin", T(3, 4), 0, True)
ms_case("MS.Functional.max", T(3, 4))
ms_case("MS.Functional.max", T(3, 4), 1)
ms_case("MS.Functional.max", T(3, 4), 0, True)
ms_case("MS.Functional.max", T(2, 3), keepdims=True)  # the whole tensor's, its index 0
ms_case("MS.Functional.min", T(3, 4))
ms_case("MS.Functional.min", T(3, 4), axis=1)
ms_case("MS.Functional.median", T(3, 5))
ms_case("MS.Functional.median", T(3, 5), 0, True)
ms_case("MS.Tensor.median", T(3, 5), 1)
ms_case("MS.Functional.aminmax", T(3, 4))
ms_case("MS.Functional.aminmax", T(3, 4), axis=1, keepdims=True)
ms_case("MS.Functional.argsort", T(3, 4))
ms_case("MS.Functional.argsort", T(3, 4), 0, True)
ms_case("MS.Tensor.argsort", T(3, 4), 1)
ms_case("MS.Functional.sort", T(3, 4))
ms_case("MS.Functional.sort", T(3, 4), 0, True)
ms_case("MS.Tensor.sort", T(3, 4))
ms_case("MS.Functional.bincount", V([3, 1, 3, 2], "int32"))
ms_case("MS.Functional.bincount", V([3, 1, 3, 2], "int32"), T(4), 6).backward = False
ms_case("MS.Tensor.bincount", V([0, 4, 4, 2], "int32"))
ms_case("MS.Functional.count_nonzero", V([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]]))
ms_case("MS.Functional.count_nonzero", V([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]]), 1)
ms_case("MS.Functional.count_nonzero", V([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]]), (0,), True, torch.int64)
ms_case("MS.Functional.dot", T32(2, 3), T32(3, 4))
ms_case("MS.Functional.dot", T32(2, 2, 3), T32(4, 3, 5))
ms_case("MS.Functional.norm", T(3, 4))
ms_case("MS.Functional.norm", T(3, 4), 1)
ms_case("MS.Functional.norm", T(3, 4), "fro")
ms_case("MS.Functional.norm", T32(3, 4), "nuc")
ms_case("MS.Functional.norm", T(2, 3, 4), 2.0, 1, True)
ms_case("MS.Functional.norm", T(2, 3, 4), float("inf"), (1, 2))
ms_case("MS.Functional.matrix_solve", V([[3.0, 1.0, 0.5], [0.2, 2.0, 0.1], [0.4, 0.3, 4.0]], "float32"), T32(3, 2))
ms_case("MS.Functional.matrix_solve", V([[3.0, 1.0], [0.2, 2.0]], "float32"), T32(2, 3), True)
ms_case("MS.Functional.cholesky", V([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])).backward = False
ms_case("MS.Functional.cholesky", V([[4.0, 1.0], [1.0, 3.0]]), True).backward = False
ms_case("MS.Tensor.cholesky", V([[4.0, 1.0], [1.0, 3.0]])).backward = False
ms_case("MS.Functional.truncate_div", T(3, 4, low=-5.0, high=5.0), T(3, 4, low=0.5, high=2.0)).backward = False
ms_case("MS.Functional.truncate_div", I(3, 4, low=-9, high=9), I(3, 4, low=1, high=4))
ms_case("MS.Functional.truncate_mod", T(3, 4, low=-5.0, high=5.0), T(3, 4, low=0.5, high=2.0))
ms_case("MS.Functional.cond", V([[3.0, 1.0], [0.2, 2.0]], "float32"))
ms_case("MS.Functional.cond", V([[3.0, 1.0], [0.2, 2.0]], "float32"), 1)
ms_case("MS.Functional.trapz", T32(3, 5))
ms_case("MS.Functional.trapz", T32(3, 5), T32(5))
ms_case("MS.Functional.trapz", T32(3, 5), dx=0.5, dim=0)
ms_case("MS.Functional.searchsorted", V([1.0, 2.0, 3.0, 5.0]), V([2.5, 0.0, 5.0]))
ms_case("MS.Functional.searchsorted", V([1.0, 2.0, 3.0, 5.0]), V([2.0, 6.0]), right=True)
ms_case("MS.Functional.real", T(3, 4)).backward = False
ms_case("MS.Tensor.real", T(3, 4)).backward = False
ms_case("MS.Functional.block_diag", T(2, 3), T(1, 2))
ms_case("MS.Functional.cummax", T(3, 4), 1).backward = False
ms_case("MS.Tensor.cummax", T(3, 4), 0).backward = False
ms_case("MS.Functional.cummin", T(3, 4), 1).backward = False
ms_case("MS.Tensor.cummin", T(3, 4), 0).backward = False
# MindSpore has no CPU backward of cholesky (CholeskyGrad), cummax/cummin
# (InplaceScatterAdd), and real's is complex: their gradients against torch's
# same function, which MindSpore documents them as.
_SPD = [[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]]
for _name in ["MS.Functional.cholesky", "MS.Tensor.cholesky"]:
    CASES.append(Case(_name, (V(_SPD),), {}, lambda a, upper=False: torch.linalg.cholesky(a, upper=upper)))
CASES.append(Case("MS.Functional.cholesky", (V(_SPD), True), {}, lambda a, upper=False: torch.linalg.cholesky(a, upper=upper)))
for _name in ["MS.Functional.cummax", "MS.Tensor.cummax"]:
    CASES.append(Case(_name, (T(3, 4), 1), {}, torch.cummax))
for _name in ["MS.Functional.cummin", "MS.Tensor.cummin"]:
    CASES.append(Case(_name, (T(3, 4), 1), {}, lambda x, dim: (lambda r: (r.values, r.indices.int()))(torch.cummin(x, dim))))
for _name in ["MS.Functional.real", "MS.Tensor.real"]:
    CASES.append(Case(_name, (T(3, 4),), {}, lambda x: x.clone()))
# MindSpore's own array functions (ops/ms_array.rs), against MindSpore.
_ND = V([[0, 1], [1, 2], [0, 1]], "int32")  # a repeated row: summed, multiplied, maxed in order
ms_case("MS.Functional.tensor_scatter_add", T(2, 3), _ND, T(3))
ms_case("MS.Functional.tensor_scatter_add", T(3, 4), V([[2], [0]], "int32"), T(2, 4))
ms_case("MS.Functional.tensor_scatter_sub", T(2, 3), _ND, T(3))
ms_case("MS.Functional.tensor_scatter_mul", T(2, 3), _ND, T(3)).backward = False
ms_case("MS.Functional.tensor_scatter_div", T(2, 3), _ND, T(3, low=0.5, high=2.0)).backward = False
ms_case("MS.Functional.tensor_scatter_max", T(2, 3), _ND, T(3)).backward = False
ms_case("MS.Functional.tensor_scatter_min", T(2, 3), _ND, T(3)).backward = False
for _how in ["add", "sub", "mul", "div", "max", "min"]:
    ms_case(f"MS.Functional.scatter_nd_{_how}", T(3, 4, low=0.5, high=2.0), V([[2], [0], [2]], "int32"), T(3, 4, low=0.5, high=2.0)).backward = False
for _how in ["add", "mul", "div", "max", "min"]:
    ms_case(f"MS.Functional.scatter_{_how}", T(3, 4, low=0.5, high=2.0), V([2, 0, 2], "int32"), T(3, 4, low=0.5, high=2.0)).backward = False
ms_case("MS.Functional.scatter_add", T(3, 2), V([[0, 1], [1, 1]], "int32"), T(2, 2, 2)).backward = False
ms_case("MS.Functional.scatter_update", T(3, 4), V([2, 0], "int32"), T(2, 4)).backward = False
ms_case("MS.Functional.inplace_add", T32(3, 4), T32(2, 4), (2, 0)).backward = False
ms_case("MS.Functional.inplace_add", T32(3, 4), T32(1, 4), 1).backward = False
ms_case("MS.Functional.inplace_sub", T32(3, 4), T32(2, 4), (1, 1)).backward = False
ms_case("MS.Functional.inplace_update", T32(3, 4), T32(2, 4), (2, 0)).backward = False
ms_case("MS.Functional.inplace_index_add", T(3, 4), V([2, 0, 2], "int32"), T(3, 4), 0).backward = False
ms_case("MS.Functional.inplace_index_add", T(3, 4), V([3, 1], "int32"), T(3, 2), 1).backward = False
ms_case("MS.Functional.assign_add", T(3, 4), T(3, 4)).backward = False
ms_case("MS.Functional.assign_sub", T(3, 4), T(3, 4)).backward = False
ms_case("MS.Functional.scatter_nd", V([[0], [2], [0]], "int32"), T(3, 4), (3, 4))
ms_case("MS.Functional.scatter_nd", V([[0, 1], [1, 0]], "int32"), T(2), (2, 3))
ms_case("MS.Functional.gather_nd", T(3, 4), V([[0, 1], [2, 3], [0, 1]], "int32"))
ms_case("MS.Functional.gather_nd", T(3, 4, 2), V([[1], [0]], "int32"))
ms_case("MS.Functional.slice", T(3, 4), (1, 0), (2, 3))
ms_case("MS.Functional.slice", T(2, 3, 4), (0, 1, 1), (-1, 2, -1)).backward = False  # no MindSpore SliceGrad of -1
ms_case("MS.Functional.strided_slice", T(3, 4), (0, 1), (3, 4), (2, 2))
# MindSpore 2.10's CPU gradient of a masked strided_slice misplaces it: forward only.
ms_case("MS.Functional.strided_slice", T(3, 5), (1, 1), (2, 4), (1, 1), begin_mask=1, end_mask=2).backward = False
ms_case("MS.Functional.select_scatter", T(3, 4), T(4), 0, 1)
ms_case("MS.Functional.select_scatter", T(3, 4), T(3), 1, -1)
ms_case("MS.Functional.unsorted_segment_sum", T(4, 3), V([1, 0, 1, 2], "int32"), 4)
ms_case("MS.Functional.unsorted_segment_sum", T(2, 3), V([[0, 1, 0], [2, 2, 1]], "int32"), 3)
ms_case("MS.Functional.unsorted_segment_prod", T(4, 3), V([1, 0, 1, 1], "int32"), 3).backward = False
ms_case("MS.Functional.unsorted_segment_max", T(4, 3), V([1, 0, 1, 1], "int32"), 3).backward = False
ms_case("MS.Functional.unsorted_segment_min", T(4, 3), V([1, 0, 1, 1], "int32"), 3).backward = False
ms_case("MS.Functional.unsorted_segment_max", V([[1, 5], [3, 2]], "int32"), V([0, 0], "int32"), 2)
ms_case("MS.Functional.sparse_segment_mean", T32(4, 3), V([0, 1, 3, 3], "int32"), V([0, 0, 1, 3], "int32")).backward = False
ms_case("MS.Functional.unique", V([3, 1, 3, 2, 1], "int32"))
ms_case("MS.Functional.unique", V([0.5, 2.0, 0.5, -1.0], "float32")).backward = False
ms_case("MS.Functional.unique_with_pad", V([3, 1, 3, 2, 1], "int32"), 9)
ms_case("MS.Functional.expand", T32(3, 1), V([3, 4], "int32"))
ms_case("MS.Functional.expand", T32(2, 1, 3), V([2, -1, 4, 3], "int32"))
ms_case("MS.Functional.meshgrid", T(3), T(4))
ms_case("MS.Functional.meshgrid", T(2), T(3), T(4), indexing="ij")
ms_case("MS.Functional.meshgrid", T(2), T(3), T(2))
ms_case("MS.Functional.reverse_sequence", T(2, 4), V([2, 3], "int32"), 1)
ms_case("MS.Functional.reverse_sequence", T(4, 3, 2), V([4, 1, 3], "int32"), 0, 1)
ms_case("MS.Functional.matrix_band_part", T32(4, 5), 1, 2)
ms_case("MS.Functional.matrix_band_part", T32(2, 3, 3), -1, 0)
ms_case("MS.Functional.sequence_mask", V([1, 3, 2], "int32"), 4)
ms_case("MS.Functional.sequence_mask", V([[1, 0], [2, 2]], "int32"))
ms_case("MS.Functional.space_to_batch_nd", T32(1, 2, 4, 4), (2, 2), ((0, 0), (0, 0)))
ms_case("MS.Functional.space_to_batch_nd", T32(2, 1, 3, 2), (2, 2), ((1, 0), (0, 2)))
ms_case("MS.Functional.batch_to_space_nd", T32(4, 2, 2, 2), (2, 2), ((0, 0), (0, 0)))
ms_case("MS.Functional.batch_to_space_nd", T32(8, 1, 2, 3), (2, 2), ((1, 0), (0, 2)))
ms_case("MS.Functional.padding", T32(3, 1), 4)
ms_case("MS.Functional.padding", T32(2, 3, 1))
ms_case("MS.Functional.dyn_shape", T(2, 3))
ms_case("MS.Functional.shape", T(2, 3, 4))
ms_case("MS.Functional.rank", T(2, 3, 4))
ms_case("MS.Functional.fill", torch.float32, (2, 3), 1.5)
ms_case("MS.Functional.fill", torch.int32, (4,), 2)
ms_case("MS.Functional.scalar_to_tensor", 3)
ms_case("MS.Functional.scalar_to_tensor", 2.5, torch.float64)
ms_case("MS.Functional.tuple_to_array", (1, 2, 3))
ms_case("MS.Functional.tuple_to_array", (1.5, 2.0))
ms_case("MS.Functional.eps", T(2, 3)).backward = False
ms_case("MS.Functional.eps", T32(3)).backward = False
ms_case("MS.Functional.cast", T(2, 3), torch.float32)
ms_case("MS.Functional.cast", T(2, 3, low=-5.0, high=5.0), torch.int32)
# MindSpore's own arithmetic (ops/ms_math.rs), against MindSpore; histc and nextafter in torch too.
ms_case("MS.Functional.bias_add", T(2, 3, 4), T(3))
ms_case("MS.Functional.bias_add", T(2, 3), T(3))
ms_case("MS.Functional.addn", [T(2, 3), T(2, 3), T(2, 3)])
# accumulate_n has no MindSpore CPU kernel: the sum it documents, in torch.
CASES.append(Case("MS.Functional.accumulate_n", ([T(2, 3), T(2, 3)],), {}, lambda xs: sum(xs)))
ms_case("MS.Functional.xdivy", V([0.0, 1.5, -2.0, 0.0]), V([0.0, 2.0, 0.5, 3.0])).backward = False
ms_case("MS.Functional.xdivy", T(3, 4), T(3, 4, low=0.5, high=2.0))
ms_case("MS.Functional.imag", T(2, 3)).backward = False
ms_case("MS.Tensor.imag", T(2, 3)).backward = False
for _name in ["MS.Functional.imag", "MS.Tensor.imag"]:
    CASES.append(Case(_name, (T(2, 3),), {}, lambda x: x * 0))  # MindSpore's gradient of imag is complex
# The MindSpore bridge differentiates no tensor inside a list: addn's gradient against the sum in torch.
CASES.append(Case("MS.Functional.addn", ([T(2, 3), T(2, 3)],), {}, lambda xs: sum(xs)))
ms_case("MS.Functional.approximate_equal", V([1.0, 2.0, 3.0], "float32"), V([1.000001, 2.5, 3.0], "float32"))
ms_case("MS.Functional.approximate_equal", V([1.0, 2.0], "float32"), V([1.05, 2.2], "float32"), 0.1)
ms_case("MS.Functional.intopk", V([[0.1, 0.9, 0.5], [0.7, 0.2, 0.6]], "float32"), V([2, 0], "int32"), 1)
ms_case("MS.Functional.intopk", V([[0.1, 0.9, 0.5], [0.7, 0.2, 0.6]], "float32"), V([2, 1], "int32"), 2)
ms_case("MS.Functional.population_count", V([3, 255, -1, 0], "int16"))
ms_case("MS.Functional.population_count", V([7, 128], "uint8"))
ms_case("MS.Functional.clip_by_norm", T(2, 3), 1.0)
ms_case("MS.Functional.clip_by_norm", T(2, 3, low=-0.1, high=0.1), 1.0)
ms_case("MS.Functional.clip_by_norm", [T(2, 3), T(4)], 0.5)
ms_case("MS.Functional.vander", T32(4))
ms_case("MS.Functional.vander", T32(3), 5)
ms_case("MS.Functional.lrn", T32(2, 6, 3, 3), 2).backward = False  # MindSpore's float32 gradient cancels to 2e-5 here
ms_case("MS.Functional.lrn", T32(1, 4, 2, 2, low=0.1, high=2.0), 1, 2.0, 0.5, 0.75)
ms_case("MS.Functional.iou", V([[0, 0, 2, 2], [1, 0, 4, 3], [0, 1, 1, 5]], "float32"), V([[1, 1, 3, 3], [0, 0, 4, 4]], "float32")).backward = False
ms_case("MS.Functional.iou", V([[0, 0, 2, 2], [1, 0, 4, 3]], "float32"), V([[1, 1, 3, 3]], "float32"), "iof").backward = False
ms_case("MS.Functional.histc", T32(20), 4, -1.0, 1.0).backward = False
ms_case("MS.Functional.histc", T32(3, 5), 6).backward = False
ms_case("MS.Tensor.histc", T32(10), 3, 0.0, 2.0).backward = False
case("Torch.histc", T(30), 5, -1.0, 1.5).backward = False
case("Torch.histc", T(4, 5), 7).backward = False
case("Tensor.histc", V([1.0, 1.0, 1.0]), 4).backward = False
case("Mint.histc", T32(12), 3).backward = False
ms_case("MS.Functional.nextafter", T32(5), T32(5)).backward = False
ms_case("MS.Functional.nextafter", V([1.0, 0.0, -1.0, 2.0]), V([2.0, -1.0, -1.0, 0.0])).backward = False
ms_case("MS.Tensor.nextafter", V([1.0, 0.0], "float32"), V([0.0, 1.0], "float32")).backward = False
case("Torch.nextafter", T(6), T(6)).backward = False
case("Torch.nextafter", V([1.0, 0.0, -1.0], "float32"), V([2.0, -1.0, -1.0], "float32")).backward = False
case("Tensor.nextafter", V([0.5, 0.0], "float32"), V([0.0, 0.0], "float32")).backward = False
ms_case("MS.Tensor.astype", T(2, 3), torch.float32)
ms_case("MS.Tensor.astype", T(2, 3, low=-5.0, high=5.0), torch.int32)
# Bessel functions (ops/bessel.rs), against MindSpore; k and y on positive inputs.
for _kind in ["j0", "j1", "i0", "i1", "i0e", "i1e"]:
    ms_case(f"MS.Functional.bessel_{_kind}", V([-30.0, -7.5, -1.0, -0.1, 0.0, 0.3, 2.0, 9.0, 25.0, 80.0]))
    ms_case(f"MS.Functional.bessel_{_kind}", T(3, 4, low=-5.0, high=5.0))
for _kind in ["y0", "y1", "k0", "k1", "k0e", "k1e"]:
    ms_case(f"MS.Functional.bessel_{_kind}", V([0.01, 0.1, 0.5, 1.0, 2.5, 7.0, 15.0, 40.0, 90.0]))
    ms_case(f"MS.Functional.bessel_{_kind}", T(3, 4, low=0.2, high=6.0))
# More of MindSpore's own functions (ops/ms_torch.rs, ops/ms_math.rs).
for _name in ["MS.Functional.angle", "MS.Tensor.angle"]:  # no MindSpore CPU kernel: torch's angle, which it documents
    CASES.append(Case(_name, (V([-1.5, 0.0, 2.0, -0.0]),), {}, torch.angle))
ms_case("MS.Functional.col2im", T32(1, 2, 4, 9), V([4, 4], "int32"), [2, 2], [1, 1], [0, 0], [1, 1])
ms_case("MS.Functional.col2im", T32(2, 1, 6, 6), V([5, 3], "int32"), [3, 2], [1, 1], [1, 0], [2, 1])
ms_case("MS.Functional.matrix_diag_part", T32(3, 4), V(1, "int32"), V(0.0, "float32"))
ms_case("MS.Functional.matrix_diag_part", T32(2, 4, 3), V(-1, "int32"), V(0.0, "float32"))
ms_case("MS.Functional.matrix_set_diag", T32(3, 4), T32(3))
ms_case("MS.Functional.matrix_set_diag", T32(2, 4, 3), T32(2, 2), V(1, "int32"))
ms_case("MS.Functional.matrix_diag", T32(3))
ms_case("MS.Functional.matrix_diag", T32(2, 3), V(1, "int32"), padding_value=V(9.0, "float32"))
ms_case("MS.Functional.hann_window", 5)
ms_case("MS.Functional.hann_window", 6, False, dtype=torch.float32)
ms_case("MS.Functional.bartlett_window", V(5, "int32"))
ms_case("MS.Functional.bartlett_window", V(6, "int32"), False)
ms_case("MS.Functional.blackman_window", V(5, "int32"))
ms_case("MS.Functional.blackman_window", V(7, "int32"), False, dtype=torch.float64)
ms_case("MS.Functional.batch_dot", T32(2, 3), T32(2, 3))
ms_case("MS.Functional.batch_dot", T32(2, 3, 4), T32(2, 4, 5))
ms_case("MS.Functional.batch_dot", T32(2, 3, 4), T32(2, 5, 3), (1, 2))
_ANCHORS = V([[0, 0, 3, 3], [2, 1, 8, 6], [1, 4, 2, 9]], "float32")
ms_case("MS.Functional.bounding_box_encode", _ANCHORS, V([[1, 1, 5, 4], [2, 2, 7, 7], [0, 3, 3, 8]], "float32")).backward = False
ms_case("MS.Functional.bounding_box_encode", _ANCHORS, V([[1, 1, 5, 4], [2, 2, 7, 7], [0, 3, 3, 8]], "float32"), (0.1, 0.0, -0.1, 0.2), (0.5, 1.0, 2.0, 0.25)).backward = False
ms_case("MS.Functional.bounding_box_decode", _ANCHORS, T32(3, 4, low=-0.5, high=0.5), (8, 10)).backward = False
ms_case("MS.Functional.bounding_box_decode", _ANCHORS, T32(3, 4, low=-3.0, high=5.0), (20, 6), (0.1, 0.0, -0.1, 0.2), (0.5, 1.0, 2.0, 0.25), 0.1).backward = False
ms_case("MS.Functional.check_valid", V([[0, 0, 9, 3], [0, 0, 9.5, 3], [0, 0, 3, 14], [0, 0, 3, 15], [-1, 0, 2, 2], [0, -0.5, 2, 2]], "float32"), V([15, 10, 1], "float32"))
ms_case("MS.Functional.check_valid", V([[0, 0, 19, 3], [0, 0, 20, 3], [0, 0, 3, 29]], "float32"), V([15, 10, 2], "float32"))
