"""The rounding magnitudes of a script's call, for the ``bound`` standard and
the api standard's rescue: per element of each forward output and each input
gradient, the magnitude that rounding in the device's precision acts on,
computed on the bench in float64 by the API's rounding class (``ROUNDING``,
rendered from the op table): the op on absolute values (terms, sums), a
selection's absolute values and the backward of |dy| (selects), central
differences along each float input (smooth, parts, composite), the parts of a
formula that cancels inside (gelu, attention), and for composites also the op
computed in float32. The mirror of
runtime/src/replay/magnitude.rs (the native replay computes the same).
"""

import math

import numpy as np
import torch

from ._tables import KERNEL_COMMON_ERROR, KEYWORD_ALIASES, REDUCED_OPERANDS, ROUNDING, ROUNDING_FACTORS, ROUNDING_OPERANDS, RULEBOOK
from .data_generate import DType, Master, TensorSpec, any_marked, dtype_info, wants_grad
from .npu_bench import fusion_attention_magnitudes
from .torch_exec import to_torch

# --- msprobe-rs: the scripts inline this file from here ---


# The relative perturbation of the central differences (2^-20): large against
# float64's rounding, small against any curvature that matters.
MAGNITUDE_H = 2.0 ** -20
# float32's unit roundoff: the float32 probe's errors in its units.
MAGNITUDE_U32 = 2.0 ** -24


def _mag_table_name(api_op, prefixes):
    """The op-table name of api_op (``Prefix.op``), looked up with each of prefixes in turn
    ("MS." first for MindSpore's own meanings, as the op table's lookup does); None for an
    API the op table does not hold."""
    return next((prefix + api_op for prefix in prefixes if prefix + api_op in ROUNDING), None)


def rounding_of(api_op, prefixes):
    """The rounding class of the op-table entry of api_op (_mag_table_name); None for an API
    the op table does not hold."""
    name = _mag_table_name(api_op, prefixes)
    return None if name is None else ROUNDING[name]


def common_error_of(api_op, prefixes):
    """The (epsilons, source) of the common error the kernel of api_op is known to leave in
    float32 results (the op table's CommonError); None for most."""
    return KERNEL_COMMON_ERROR.get(_mag_table_name(api_op, prefixes))


def reduced_operands_of(api_op, prefixes, device):
    """The (k, u, source) of the operands' rounding that device adds to float32 rows of api_op
    (the rulebook's reduced_operands of the op's kind: the op table's ReducedOperands); None
    for most ops and for the CPU."""
    kind = REDUCED_OPERANDS.get(_mag_table_name(api_op, prefixes))
    o = RULEBOOK["reduced_operands"].get(kind, {}).get(device) if kind else None
    return None if o is None else (o["k"], 2.0 ** -(o["mantissa"] + 1), o["source"])


def rounding_factors(entry, dtype, backward):
    """The class's (k, compute dtype) of k*(u*magnitude + eta) + ulp/2 for an output of dtype (the
    tested side's canonical name), forward or a gradient; None for a dtype that is not a float."""
    per_dtype = ROUNDING_FACTORS[entry[1] if entry[0] == "parts" else entry[0]].get(dtype)
    return None if per_dtype is None else per_dtype[1 if backward else 0]


def _mag_is_float(value):
    return isinstance(value, Master) and dtype_info(value.spec.dtype)[1] == "float"


def _mag_values(master):
    """A float Master's values as the bench starts from them (rounded to the dumped dtype), in float64."""
    return to_torch(master, "cpu", raise_precision=False).to(torch.float64).numpy()


def _mag_walk(value, dtype, tensor=None, scalar=None):
    """value with its float tensors made Masters of dtype from tensor(values) (their
    values unchanged without it), its float dtype arguments dtype, and its Python
    numbers passed through scalar; lists and tuples walked."""
    if _mag_is_float(value):
        array = _mag_values(value)
        s = value.spec
        spec = TensorSpec(dtype, s.shape, s.low, s.high, s.requires_grad, s.data_name)
        return Master(spec, array if tensor is None else tensor(array))
    if isinstance(value, DType) and dtype_info(value.name)[1] == "float":
        return DType(dtype)
    if isinstance(value, (list, tuple)):
        items = [_mag_walk(v, dtype, tensor, scalar) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if scalar is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        return scalar(value)
    return value


def _mag_signs(n, pattern):
    """The sign of each element of a patterned perturbation: alternating, or the
    Thue-Morse sequence (the parity of the flat index's bits)."""
    j = np.arange(n, dtype=np.int64)
    if pattern == "alternating":
        odd = j % 2
    else:
        odd = np.zeros(n, dtype=np.int64)
        while j.any():
            odd ^= j & 1
            j = j >> 1
    return np.where(odd == 1, -1.0, 1.0)


def _mag_perturbed(h, pattern):
    """Values times 1 + h (uniform), or 1 + h*sign by a pattern."""
    def tensor(x):
        if pattern == "uniform":
            return x * (1.0 + h)
        return (x.reshape(-1) * (1.0 + h * _mag_signs(x.size, pattern))).reshape(x.shape)
    return tensor


def _mag_absolute(negate, operand):
    """(tensor, scalar) transforms to absolute values, non-positive where negate;
    integers too where they are an operand (ROUNDING_OPERANDS: a dim keeps its sign)."""
    sign = -1.0 if negate else 1.0

    def scalar(x):
        if isinstance(x, float):
            return sign * abs(x)
        if negate:
            return -abs(x)
        return abs(x) if operand else x
    return (lambda x: sign * np.abs(x)), scalar


def _mag_flat(run_result):
    """(per output, per gradient) float64 values of one run: float tensors only for
    the outputs (None elsewhere), every gradient."""
    outputs, grads = run_result

    def values(v, any_tensor):
        if isinstance(v, torch.Tensor) and (any_tensor or v.is_floating_point()):
            return v.detach().cpu().to(torch.float64).numpy().reshape(-1)
        return None
    return [values(o, False) for o in outputs], [values(g, True) for g in (grads or [])]


def _mag_add_difference(acc, x, y, scale):
    """acc[i] += |x[i] - y[i]| * scale; None where a side is missing or the sizes differ."""
    for i, a in enumerate(acc):
        xi = x[i] if i < len(x) else None
        yi = y[i] if i < len(y) else None
        if a is None or xi is None or yi is None or a.size != xi.size or xi.size != yi.size:
            acc[i] = None
        else:
            acc[i] = a + np.abs(xi - yi) * scale


def _mag_added(acc, parts):
    """acc + parts; None when the sizes differ or acc is missing."""
    return acc + parts if acc is not None and acc.size == parts.size else None


def _mag_perturbable(value):
    if isinstance(value, (list, tuple)):
        return any(_mag_perturbable(v) for v in value)
    return _mag_is_float(value)


def _mag_float64_call(value):
    """Whether a float tensor input is float64 (its device computes in float64: no float32 probe)."""
    if isinstance(value, (list, tuple)):
        return any(_mag_float64_call(v) for v in value)
    return _mag_is_float(value) and dtype_info(value.spec.dtype)[0] == "float64"


class _MagCall:
    """The bench call's variations: run(args, kwargs, grad_outputs, raise_precision)
    runs the bench function (the side's run_bench) on Master trees."""

    def __init__(self, run, args, kwargs, grad_outputs):
        self.run, self.args, self.kwargs, self.grad_outputs = run, list(args), dict(kwargs), grad_outputs
        self.keys = list(self.kwargs)

    def slots(self):
        """Top-level arguments, positionals then keywords: (slot, keyword or None, value)."""
        n = len(self.args)
        return [(i, None, v) for i, v in enumerate(self.args)] + [(n + i, k, self.kwargs[k]) for i, k in enumerate(self.keys)]

    def run_with(self, arg, grad=None, dtype="torch.float64", raise_precision=True):
        """Runs the bench with each float tensor in dtype and each top-level argument
        passed through arg(slot, keyword, value); the dumped output gradients in dtype,
        through grad (values) when given."""
        values = {slot: arg(slot, key, v) for slot, key, v in self.slots()}
        n = len(self.args)
        args = [values[i] for i in range(n)]
        kwargs = {k: values[n + i] for i, k in enumerate(self.keys)}
        grads = None if self.grad_outputs is None else [_mag_walk(g, dtype, grad) for g in self.grad_outputs]
        return _mag_flat(self.run(args, kwargs, grads, raise_precision))


def _mag_on_absolute_values(c, negated_position, negated_name, names):
    """terms and sums: the op (and its backward, with |dy|) on the absolute values of
    its floats (and of its integer operands), the negated parameter made non-positive."""
    def arg(slot, key, v):
        name = KEYWORD_ALIASES.get(key, key) if key is not None else (names[slot] if slot < len(names) else None)
        negate = negated_name is not None and (name == negated_name if key is not None else slot == negated_position)
        tensor, scalar = _mag_absolute(negate, name in ROUNDING_OPERANDS)
        return _mag_walk(v, "torch.float64", tensor, scalar)
    outputs, grads = c.run_with(arg, grad=np.abs)
    return [None if o is None else np.abs(o) for o in outputs], [None if g is None else np.abs(g) for g in grads]


def _mag_chain_lengths(chain, shape, output, grads):
    """How many terms one element of each result of a contraction sums (runtime/src/ops/chain.rs's
    lengths): (output 0's, [each gradient's]), None where the structure does not say; None for none.
    shape(name) gives a tensor parameter's shape or None, output output 0's element count, grads
    each gradient's parameter name."""
    def numel(s):
        return int(np.prod(s, dtype=np.int64)) if len(s) else 1

    def ratio(a, b):
        return max(a // max(b, 1), 1)
    if chain is None:
        return None
    if chain[0] == "product":
        a, b = chain[1], chain[2]
        sa, sb = shape(a), shape(b)
        if sa is None or sb is None or not len(sa):
            return None
        k = sa[-1]
        b_batch = ratio(numel(sb), sb[-1] * sb[-2]) if len(sb) >= 2 else 1
        n = sb[-1] if len(sb) >= 2 else 1
        rows = ratio(numel(sa), k)

        def per(p):
            if p == a:
                return max(n, 1)
            if p == b:
                return ratio(rows, b_batch)
            s = shape(p) if p is not None else None
            return None if s is None else ratio(output, numel(s))
        return k, [per(p) for p in grads]
    if chain[0] == "linear":
        x, w = shape("input"), shape("weight")
        if x is None or w is None or not len(x):
            return None
        k = x[-1]
        rows, n = ratio(numel(x), k), (w[0] if len(w) == 2 else 1)
        return k, [max(n, 1) if p == "input" else rows if p in ("weight", "bias") else None for p in grads]
    if chain[0] == "conv":
        x, w = shape("input"), shape("weight")
        channels = 1 if x is not None and w is not None and len(x) == len(w) else 0
        if x is None or w is None or len(w) < 2 or len(x) <= channels:
            return None
        back, over = ratio(numel(w), w[1]), ratio(numel(x), x[channels])
        return ratio(numel(w), w[0]), [back if p == "input" else over if p in ("weight", "bias") else None for p in grads]
    return None


def _mag_chained(c, chain, names, outputs, grads):
    """sums: each result of a contraction whose accumulation chain is longer than the rulebook's
    chain_covered has its magnitudes grown by sqrt(n / covered) (the mirror of chained in
    runtime/src/replay/magnitude.rs): a device summing its terms one after another leaves that
    much more where they share a sign."""
    specs = dict(zip(names, c.args))
    specs.update({KEYWORD_ALIASES.get(k, k): v for k, v in c.kwargs.items()})

    def shape(name):
        v = specs.get(name)
        return list(v.spec.shape) if isinstance(v, Master) else None
    output = 0 if not outputs or outputs[0] is None else int(np.size(outputs[0]))
    chains = _mag_chain_lengths(chain, shape, output, _mag_gradient_params(c, names))
    if chains is None:
        return outputs, grads
    covered = RULEBOOK["rounding"]["chain_covered"]

    def grown(m, n):
        return m if m is None or n is None or n <= covered else m * math.sqrt(n / covered)
    outputs = [grown(outputs[0], chains[0])] + list(outputs[1:]) if outputs else outputs
    grads = [grown(g, n) for g, n in zip(grads, chains[1] + [None] * (len(grads) - len(chains[1])))]
    return outputs, grads


def _mag_selections(c):
    """selects (max pooling, relu): the outputs' absolute values, and the gradients of the backward
    of |dy| (the same places chosen, their gradients summed as absolute values)."""
    outputs, grads = c.run_with(lambda slot, key, v: _mag_walk(v, "torch.float64"), grad=np.abs)
    return [None if o is None else np.abs(o) for o in outputs], [None if g is None else np.abs(g) for g in grads]


def _mag_first_order(c, patterns, fixed=frozenset()):
    """|y| + sum over each float input j and pattern p of |y(x_j(1+h p)) - y(x_j(1-h p))| / 2h,
    for the outputs and (with the same dy) the gradients; also the plain float64 run. The slots
    in fixed are not perturbed."""
    base = c.run_with(lambda slot, key, v: _mag_walk(v, "torch.float64"))
    o = [None if x is None else np.abs(x) for x in base[0]]
    g = [None if x is None else np.abs(x) for x in base[1]]
    for j, _, value in c.slots():
        if j in fixed or not _mag_perturbable(value):
            continue
        for pattern in patterns:
            def at(h):
                return c.run_with(lambda slot, key, v: _mag_walk(v, "torch.float64", _mag_perturbed(h, pattern) if slot == j else None))
            plus, minus = at(MAGNITUDE_H), at(-MAGNITUDE_H)
            _mag_add_difference(o, plus[0], minus[0], 0.5 / MAGNITUDE_H)
            _mag_add_difference(g, plus[1], minus[1], 0.5 / MAGNITUDE_H)
    return o, g, base


def _mag_bound(c, names):
    """The call's arguments by the signature's parameter names (positionals by position,
    keywords by name or alias): float tensors as float64 torch tensors, other tensors as
    they are, anything else unchanged."""
    def value(v):
        if _mag_is_float(v):
            return torch.from_numpy(_mag_values(v))
        return to_torch(v, "cpu", raise_precision=False) if isinstance(v, Master) else v
    bound = {name: value(v) for name, v in zip(names, c.args)}
    for k, v in c.kwargs.items():
        bound[KEYWORD_ALIASES.get(k, k)] = value(v)
    return bound


def _mag_dtypes(c, names):
    """The dumped (canonical) dtype of each float tensor argument, by parameter name."""
    named = list(zip(names, c.args)) + [(KEYWORD_ALIASES.get(k, k), v) for k, v in c.kwargs.items()]
    return {name: dtype_info(v.spec.dtype)[0] for name, v in named if _mag_is_float(v)}


def _mag_flat64(t):
    return t.reshape(-1).numpy()


def gelu_parts(bound, dy, dtypes):
    """gelu's parts (the mirror of gelu_parts in runtime/src/ops/nn.rs): x*(1 + erf(x/sqrt2))/2
    cancels inside for negative x, and so does its derivative (tanh form alike):
    |x|*(1 + |inner|)/2 forward, |dy|*((1 + |inner|)/2 + |x*inner'|/2) backward (none without dy)."""
    x = bound["input"].reshape(-1).numpy()
    c = math.sqrt(2.0 / math.pi)
    if bound.get("approximate") == "tanh":
        t = np.tanh(c * (x + 0.044715 * x * x * x))
        inner, slope = np.abs(t), np.abs(x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x))
    else:
        erf = torch.special.erf(torch.from_numpy(x * (1.0 / math.sqrt(2.0)))).numpy()
        inner, slope = np.abs(erf), np.abs(x * (2.0 / math.sqrt(math.pi)) * (1.0 / math.sqrt(2.0)) * np.exp(-x * x / 2.0))
    forward = [np.abs(x) * 0.5 * (1.0 + inner)]
    if dy is None or dy.numel() != x.size:
        return forward, []
    return forward, [("input", np.abs(dy.reshape(-1).numpy()) * (0.5 * (1.0 + inner) + 0.5 * slope))]


def _mag_sdpa_weights(bound, q, k):
    """The attention weights of scaled_dot_product_attention (softmax of the scaled,
    masked logits) and the scale, as runtime/src/ops/nn.rs computes them."""
    if float(bound.get("dropout_p") or 0.0) != 0.0:
        raise ValueError("scaled_dot_product_attention: dropout_p > 0 is random")
    if bound.get("enable_gqa") and q.shape[max(q.dim() - 3, 0)] != k.shape[max(k.dim() - 3, 0)]:
        raise ValueError("scaled_dot_product_attention: grouped-query attention")
    scale = bound.get("scale")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    attn = (q @ k.transpose(-2, -1)) * scale
    if bound.get("is_causal"):
        allowed = torch.ones(attn.shape[-2], attn.shape[-1], dtype=torch.bool).tril()
        attn = attn.masked_fill(~allowed, -math.inf)
    mask = bound.get("attn_mask")
    if isinstance(mask, torch.Tensor):
        attn = attn.masked_fill(~(mask != 0), -math.inf) if mask.dtype == torch.bool else attn + mask.to(torch.float64)
    return torch.softmax(attn, -1), scale


def sdpa_parts(bound, dy, dtypes):
    """scaled_dot_product_attention's parts (the mirror of sdpa_parts in
    runtime/src/ops/nn.rs): its output sums P*V and its gradients sum dS*K, dS^T*Q,
    P^T*dO with dS = P*(dO*V^T - rowsum(dO*O)), a difference that cancels exactly where a
    row attends to one key: the same sums over absolute values."""
    q, k, v = bound["query"], bound["key"], bound["value"]
    p, scale = _mag_sdpa_weights(bound, q, k)
    qa, ka, va = q.abs(), k.abs(), v.abs()
    pv = p @ va
    if dy is None or dy.numel() != pv.numel():
        return [_mag_flat64(pv)], []
    doa = dy.reshape(pv.shape).abs()
    d = (doa * pv).sum(-1, keepdim=True)  # rowsum(dO*O) over absolute values: O's own parts, P*|V|
    ds = p * ((doa @ va.transpose(-2, -1)) + d)
    return [_mag_flat64(pv)], [("query", _mag_flat64((ds @ ka) * scale)), ("key", _mag_flat64((ds.transpose(-2, -1) @ qa) * scale)),
                             ("value", _mag_flat64(p.transpose(-2, -1) @ doa))]


def embedding_parts(bound, dy, dtypes):
    """embedding's weight gradient sums the rows of dy of each index, which a device
    accumulating in the dtype rounds partial sum by partial sum (the mirror of embedding_parts
    in runtime/src/ops/nn.rs): sum |dy| per weight row; none forward."""
    index, weight = bound["input"], bound["weight"]
    if dy is None or weight.dim() != 2 or dy.numel() != index.numel() * weight.shape[1]:
        return [], []
    rows, width = weight.shape
    idx = index.reshape(-1).to(torch.int64)
    idx = torch.where(idx < 0, idx + rows, idx)
    keep = (idx >= 0) & (idx < rows)
    sums = torch.zeros(rows, width, dtype=torch.float64)
    sums.index_add_(0, idx[keep], dy.reshape(-1, width).to(torch.float64).abs()[keep])
    return [], [("weight", _mag_flat64(sums))]


def softmax_parts(bound, dy, dtypes):
    """softmax's gradient y*(dy - sum(dy*y)) cancels where a row attends to one element, and a
    device computes it from its own rounded y (the mirror of softmax_parts in
    runtime/src/ops/nn.rs): |y|*(|dy| + sum|dy*y|) along the dim; none forward."""
    x = bound["input"].to(torch.float64)
    dim = bound.get("dim")
    dim = (0 if x.dim() in (0, 1, 3) else 1) if dim is None else int(dim)
    if dy is None or x.dim() == 0 or dy.numel() != x.numel():
        return [], []
    y = torch.softmax(x, dim).abs()
    g = dy.reshape(y.shape).to(torch.float64).abs()
    return [], [("input", _mag_flat64(y * (g + (g * y).sum(dim, keepdim=True))))]


def layer_norm_parts(bound, dy, dtypes):
    """layer_norm's weight and bias gradients sum dy*xhat and dy over every position, which a
    device accumulating in the dtype rounds partial sum by partial sum, and its input gradient
    cancels (the mirror of layer_norm_parts in runtime/src/ops/nn.rs): the terms' and the running
    partial sums' absolute values, sum |dy*xhat| + sum |s_i| and sum |dy| + sum |s_i|, and dx's
    terms over absolute values; none forward."""
    x = bound["input"].to(torch.float64)
    n = int(np.prod([int(d) for d in bound["normalized_shape"]]))
    if dy is None or n <= 0 or dy.numel() != x.numel() or x.numel() % n:
        return [], []
    rows, g = x.reshape(-1, n), dy.reshape(-1, n).to(torch.float64)
    mean = rows.sum(-1, keepdim=True) / n
    var = ((rows - mean) ** 2).sum(-1, keepdim=True) / n
    inv = 1.0 / torch.sqrt(var + float(bound.get("eps", 1e-5)))
    xhat = (rows - mean) * inv
    w = bound.get("weight")
    gw = g * (w.reshape(-1).to(torch.float64) if isinstance(w, torch.Tensor) and w.numel() == n else 1.0)
    # dx = (gw - mean(gw) - xhat*mean(gw*xhat))/sigma: its terms over absolute values.
    dx = inv * (gw.abs() + gw.abs().sum(-1, keepdim=True) / n + xhat.abs() * (gw * xhat).abs().sum(-1, keepdim=True) / n)
    return [], [("input", _mag_flat64(dx)), ("weight", _mag_flat64(_mag_terms_and_partials(g * xhat))), ("bias", _mag_flat64(_mag_terms_and_partials(g)))]


def _mag_terms_and_partials(terms):
    """sum |t_i| + sum |s_i| over dim 0, s_i the running sums: the magnitude of a sum accumulated
    position after position in the dtype."""
    return terms.abs().sum(0) + terms.cumsum(0).abs().sum(0)


def _mag_rss(t):
    """The root of the sum of squares over the last dim: what a sign pattern leaves of a sum whose
    terms' signs it makes random (Composite's measure of a sum)."""
    return torch.sqrt((t * t).sum(-1))


def batch_norm_parts(bound, dy, dtypes):
    """batch_norm's magnitudes in closed form (the mirror of batch_norm_parts in
    runtime/src/ops/batch_norm_parts.rs, whose docs give the formulas): what Composite measures
    by rerunning it along three sign patterns of each input, two of dy and once in float32,
    each pattern's first-order change bounded: an element's own term by its absolute value, a sum
    over the channel's positions by the root of its terms' squares."""
    x = bound["input"].to(torch.float64)
    if x.dim() < 2 or x.shape[1] == 0 or x.numel() == 0:
        return [], []
    c = x.shape[1]
    xc = x.transpose(0, 1).reshape(c, -1)

    def per_channel(name, fill):
        p = bound.get(name)
        if p is None:
            return torch.full((c,), fill, dtype=torch.float64), False
        return (p.reshape(-1).to(torch.float64), True) if p.numel() == c else (None, True)

    (w, has_w), (b, has_b) = per_channel("weight", 1.0), per_channel("bias", 0.0)
    if w is None or b is None:
        return [], []
    rm, rv = bound.get("running_mean"), bound.get("running_var")
    training = bool(bound.get("training", False))
    eps = float(bound.get("eps", 1e-5))
    if not training and (rm is None or rv is None or rm.numel() != c or rv.numel() != c):
        return [], []
    if training:
        mean = xc.sum(-1) / xc.shape[1]
        var = ((xc - mean[:, None]) ** 2).sum(-1) / xc.shape[1]
        var_term = torch.zeros(c, dtype=torch.float64)
    else:
        mean, var = rm.reshape(-1).to(torch.float64), rv.reshape(-1).to(torch.float64)
        var_term = var.abs() / (2.0 * (var + eps))
    sigma = torch.sqrt(var + eps)
    col = lambda v: v[:, None]  # noqa: E731
    xhat = (xc - col(mean)) / col(sigma)
    n = xc.shape[1]
    if training:
        rss_x, rss_xhat_x = _mag_rss(xc) / n, _mag_rss(xhat * xc) / n
        a = (xc.abs() + col(rss_x) + xhat.abs() * col(rss_xhat_x)) / col(sigma)
    else:
        a = (xc.abs() + col(mean.abs())) / col(sigma) + xhat.abs() * col(var_term)
    patterns = 2.0 if training else 3.0
    w_patterns, b_patterns = (3.0 if has_w else 0.0), (3.0 if has_b else 0.0)
    forward = patterns * col(w.abs()) * a + w_patterns * (col(w) * xhat).abs() + b_patterns * col(b.abs()) + (col(w) * xhat + col(b)).abs()

    def back(t):
        """[C, N*S] back to the input's layout, flat."""
        return t.reshape(c, x.shape[0], -1).transpose(0, 1).reshape(-1).numpy()

    if dy is None or dy.numel() != x.numel():
        return [back(forward)], []
    g = dy.to(torch.float64).reshape(x.shape).transpose(0, 1).reshape(c, -1)
    mean_dy, mean_dy_xhat = g.sum(-1) / n, (g * xhat).sum(-1) / n
    rss_dy, rss_dy_xhat, rss_dy_x = _mag_rss(g), _mag_rss(g * xhat), _mag_rss(g * xc)
    sum_dy, sum_dy_xhat = mean_dy * n, mean_dy_xhat * n
    # D: what one sign pattern of the input moves sum dy*xhat by.
    if training:
        moved = (rss_dy_x + sum_dy.abs() * rss_x + sum_dy_xhat.abs() * rss_xhat_x) / sigma
    else:
        moved = (rss_dy_x + sum_dy.abs() * mean.abs()) / sigma + sum_dy_xhat.abs() * var_term
    scale = w.abs() / sigma
    if training:
        grad = (col(w / sigma) * (g - col(mean_dy) - xhat * col(mean_dy_xhat))).abs()
        t = col(scale) * (g.abs() + col(rss_dy / n) + xhat.abs() * col(rss_dy_xhat / n))
        x_term = col(rss_xhat_x / sigma) * grad + col(scale) * (a * col(mean_dy_xhat.abs()) + xhat.abs() * col(moved / n))
        dx = (w_patterns + 2.0) * grad + 2.0 * t + 2.0 * x_term
    else:
        dx = col(w_patterns + 2.0 + 3.0 * var_term + 1.0) * (col(w) * g / col(sigma)).abs()
    dw = 2.0 * rss_dy_xhat + patterns * moved + (g * xhat).sum(-1).abs()
    db = 2.0 * rss_dy + g.sum(-1).abs()
    grads = [("input", back(dx))]
    if has_w:
        grads.append(("weight", dw.numpy()))
    if has_b:
        grads.append(("bias", db.numpy()))
    return [back(forward)], grads


def _mag_output_gradient_parts(bound, dy, f, parts):
    """The parts of a gradient computed from the output y = f(x): |dy|*parts(y) for the
    input's gradient; none forward (the mirror of output_gradient_parts in activation.rs)."""
    x = bound["input"].reshape(-1).numpy()
    if dy is None or dy.numel() != x.size:
        return [], []
    return [], [("input", np.abs(dy.reshape(-1).numpy()) * parts(f(x)))]


def tanh_parts(bound, dy, dtypes):
    """tanh's gradient dy*(1 - y^2) from the rounded output cancels where |y| -> 1: |dy|*(1 + y^2)."""
    return _mag_output_gradient_parts(bound, dy, np.tanh, lambda y: 1.0 + y * y)


def sigmoid_parts(bound, dy, dtypes):
    """sigmoid's gradient dy*y*(1 - y) cancels where y -> 1: |dy|*|y|*(1 + |y|)."""
    return _mag_output_gradient_parts(bound, dy, lambda x: 1.0 / (1.0 + np.exp(-x)), lambda y: np.abs(y) * (1.0 + np.abs(y)))


def npu_fusion_attention_parts(bound, dy, dtypes):
    """npu_fusion_attention's whole magnitudes, head by head (npu_bench.py's
    fusion_attention_magnitudes): attention_out, softmax_max, softmax_sum and dq, dk, dv."""
    return fusion_attention_magnitudes(dy, True, dtypes.get("query"), **bound)


# flash_attention_score's names of npu_fusion_attention's settings.
_MS_ATTENTION_NAMES = {"real_shift": "pse", "attn_mask": "atten_mask", "scalar_value": "scale", "pre_tokens": "pre_tockens",
                       "next_tokens": "next_tockens"}


def flash_attention_score_parts(bound, dy, dtypes):
    """MindSpore's flash_attention_score (the same kernel, attention_out alone, layout BSH
    unless given): npu_fusion_attention_parts under its names."""
    settings = {_MS_ATTENTION_NAMES.get(k, k): v for k, v in bound.items() if k != "drop_mask"}
    settings.setdefault("input_layout", "BSH")
    return fusion_attention_magnitudes(dy, False, dtypes.get("query"), **settings)


PARTS = {"batch_norm": batch_norm_parts, "gelu": gelu_parts, "sdpa": sdpa_parts, "layer_norm": layer_norm_parts, "softmax": softmax_parts, "embedding": embedding_parts, "tanh": tanh_parts, "sigmoid": sigmoid_parts,
         "npu_fusion_attention": npu_fusion_attention_parts, "flash_attention_score": flash_attention_score_parts}


def _mag_gradient_params(c, names):
    """The parameter name of each gradient, in the bench's order (torch_run's leaves): a
    tensor inside a list has none."""
    marked = any_marked(list(c.args) + list(c.kwargs.values()))

    def leaves(v):
        if isinstance(v, (list, tuple)):
            return sum(leaves(item) for item in v)
        return int(isinstance(v, Master) and wants_grad(v, marked))
    out = []
    for slot, key, v in c.slots():
        name = KEYWORD_ALIASES.get(key, key) if key is not None else (names[slot] if slot < len(names) else None)
        if isinstance(v, Master):
            out.extend([name if name in names else None] * leaves(v))
        else:
            out.extend([None] * leaves(v))
    return out


def _mag_parts(c, name, rest, names):
    """A formula's parts added to Smooth's or Composite's magnitudes, or alone (rest
    "nothing": what they do not give has none): to the outputs they give, and to the
    gradients of the parameters the formula names."""
    params = _mag_gradient_params(c, names)
    if rest == "nothing":
        o, g = [], [None] * len(params)
    else:
        o, g = _mag_composite(c) if rest == "composite" else _mag_first_order(c, ["uniform"])[:2]
    first_dy = c.grad_outputs[0] if c.grad_outputs else None
    dy = torch.from_numpy(_mag_values(first_dy)) if _mag_is_float(first_dy) else None
    forward, backward = PARTS[name](_mag_bound(c, names), dy, _mag_dtypes(c, names))
    o = list(forward) if rest == "nothing" else [_mag_added(x, forward[i]) if i < len(forward) else x for i, x in enumerate(o)]
    for i, param in enumerate(params[:len(g)]):
        parts = next((m for n, m in backward if n == param), None)
        if parts is not None:
            g[i] = parts if rest == "nothing" else _mag_added(g[i], parts)
    return o, g


def _mag_composite(c, fixed=(), names=()):
    """Composite's magnitudes; the parameters in fixed (by the signature's names) are not perturbed."""
    slots = frozenset(j for j, key, _ in c.slots() if (key or (names[j] if j < len(names) else None)) in fixed)
    o, g, base = _mag_first_order(c, ["uniform", "alternating", "thue-morse"], slots)
    if g:
        # The gradients along the output gradients' sign patterns (a bias's sums dy).
        for pattern in ["alternating", "thue-morse"]:
            plus = c.run_with(lambda slot, key, v: _mag_walk(v, "torch.float64"), grad=_mag_perturbed(MAGNITUDE_H, pattern))
            minus = c.run_with(lambda slot, key, v: _mag_walk(v, "torch.float64"), grad=_mag_perturbed(-MAGNITUDE_H, pattern))
            _mag_add_difference(g, plus[1], minus[1], 0.5 / MAGNITUDE_H)
    if not any(_mag_float64_call(v) for _, _, v in c.slots()):
        # The op computed in float32, its result not rounded to the output dtype.
        probe = c.run_with(lambda slot, key, v: _mag_walk(v, "torch.float32"), dtype="torch.float32", raise_precision=False)
        _mag_add_difference(o, probe[0], base[0], 1.0 / MAGNITUDE_U32)
        _mag_add_difference(g, probe[1], base[1], 1.0 / MAGNITUDE_U32)
    return o, g


def magnitudes(entry, run, args, kwargs, grad_outputs):
    """The magnitudes of one call of rounding class entry (rounding_of), as
    (per forward output, per gradient) float64 arrays (None where there is none),
    aligned with the bench's outputs and gradients. run(args, kwargs, grad_outputs,
    raise_precision) runs the bench function (torch values back); ([], []) when the
    class cannot be evaluated for this call (its rows then have no bound)."""
    if entry is None:
        return [], []
    c = _MagCall(run, args, kwargs, grad_outputs)
    try:
        if entry[0] == "terms":
            return _mag_on_absolute_values(c, entry[1], entry[2], entry[3])
        if entry[0] == "sums":
            outputs, grads = _mag_on_absolute_values(c, None, None, entry[1])
            return _mag_chained(c, entry[2], entry[1], outputs, grads)
        if entry[0] == "selects":
            return _mag_selections(c)
        if entry[0] == "smooth":
            o, g, _ = _mag_first_order(c, ["uniform"])
            return o, g
        if entry[0] == "parts":
            return _mag_parts(c, entry[1], entry[2], entry[3])
        return _mag_composite(c, *entry[1:])
    except Exception:  # an argument the variations cannot take: no bound, the rows say so
        return [], []
