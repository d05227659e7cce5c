"""The precision standards: how one compared output is judged.

The mirror of runtime/src/standard.rs: same rules, thresholds, messages and
metrics, computed the same way operation for operation (exactly rounded sums
with math.fsum, exponents with np.frexp, powers of two with np.ldexp) so that
a native replay and a script agree to the bit. Shared cases in
runtime/tests/standard/cases.json hold both to the same verdicts
(runtime/tests/standard.rs runs ``judge`` through tests/standard/check.py).
"""

import math

import numpy as np

from ._tables import EMULATED_BEYOND_BOUND, EMULATED_OVERFLOW, EMULATED_RULE, FLOAT_FORMATS, RULEBOOK, STANDARD_API_SETS

# --- msprobe-rs: the scripts inline this file from here ---


# msprobe's API sets by rule (runtime/src/ops/api_standard.rs, rendered into _tables).
_STD_ABSOLUTE = STANDARD_API_SETS["absolute"]
_STD_BINARY = STANDARD_API_SETS["binary"]
_STD_ULP = STANDARD_API_SETS["ulp"]
_STD_THOUSANDTH = STANDARD_API_SETS["thousandth"]
# Benchmark levels: (max relative, mean relative, rms) error bounds.
_STD_LEVEL1 = STANDARD_API_SETS["level1"]
_STD_LEVEL2 = STANDARD_API_SETS["level2"]
_STD_KNOWN = _STD_ABSOLUTE | _STD_BINARY | _STD_ULP | _STD_THOUSANDTH | _STD_LEVEL1 | _STD_LEVEL2
_STD_FLOATS = frozenset(["float16", "bfloat16", "float32", "float64"])
_STD_SEVERITY = {"pass": 0, "warning": 1, "error": 3}


def metrics(t, b):
    """Cosine similarity, max absolute error and max relative error in float64,
    over the elements that are finite on both sides."""
    mask = np.isfinite(t) & np.isfinite(b)
    t, b = t[mask], b[mask]
    if t.size == 0:
        return 1.0, 0.0, 0.0
    scale_t, scale_b = np.max(np.abs(t)), np.max(np.abs(b))
    if scale_t == 0 and scale_b == 0:
        cosine = 1.0
    elif scale_t == 0 or scale_b == 0:
        cosine = 0.0
    else:
        ts, bs = t / scale_t, b / scale_b
        cosine = float(np.dot(ts, bs) / (np.linalg.norm(ts) * np.linalg.norm(bs)))
        cosine = min(1.0, max(-1.0, cosine))
    diff = np.abs(t - b)
    max_abs = float(np.max(diff))
    max_rel = float(np.max(diff / (np.abs(b) + (b == 0) * 1e-8)))
    return cosine, max_abs, max_rel


def _std_g(x):
    return f"{float(x):.6g}"


def _std_fsum(values):
    """Exactly rounded sum; a sum that overflows is inf (math.fsum raises)."""
    try:
        return math.fsum(values)
    except OverflowError:
        return math.inf


def _std_ratio(count, total):
    return count / total if total else 0.0


def _std_base_name(api):
    """The API's base name as the tables spell it: after the last '.', without
    __...__ and one trailing '_'; a dunder's r/i prefix is dropped when the
    name itself is in no table (__radd__ -> add, __rsub__ stays rsub)."""
    name = api.rsplit(".", 1)[-1]
    dunder = len(name) > 4 and name.startswith("__") and name.endswith("__")
    if dunder:
        name = name[2:-2]
    if name.endswith("_"):
        name = name[:-1]
    if name not in _STD_KNOWN and dunder and name[:1] in ("r", "i"):
        name = name[1:]
    return name


def _std_rule(standard, api, backward, exact_op, dtype, bounded):
    if exact_op or dtype not in _STD_FLOATS:
        return "binary equality"
    if standard == "msprobe":
        return "cosine and max abs"
    if standard not in ("api", "bound"):
        raise ValueError(f"unknown standard {standard!r}")
    name = _std_base_name(api)
    # The api standard's exact ops (abs, relu, gather, ...) stay exact forward.
    if standard == "bound" and bounded and (backward or name in _STD_ABSOLUTE or name not in _STD_BINARY):
        return "rounding bound"
    # The op-specific rules judge what the op computes; its gradients are other
    # computations (sums over broadcast dims, reductions that cancel to rounding
    # noise), judged against the reference run.
    if backward:
        return "benchmark"
    if name in _STD_ABSOLUTE:
        return "absolute threshold"
    if name in _STD_BINARY:
        return "binary equality"
    if name in _STD_ULP:
        return "ulp"
    if name in _STD_THOUSANDTH:
        return "thousandth"
    return "benchmark"


def _std_level_bounds(api):
    name = _std_base_name(api)
    levels = RULEBOOK["benchmark"]["levels"]
    if name in _STD_LEVEL1:
        return tuple(levels["level1"])
    if name in _STD_LEVEL2:
        return tuple(levels["level2"])
    return tuple(levels["default"])


def _std_class(dtype):
    return {"float16": "fp16", "bfloat16": "bf16"}.get(dtype, "fp32")


def _std_finite(x, b):
    """(absolute error, bench) over the pairs finite on both sides."""
    mask = np.isfinite(x) & np.isfinite(b)
    x, b = x[mask], b[mask]
    return np.abs(x - b), b


def _std_msprobe(t, b, cosine_threshold, max_abs_err_threshold):
    cosine, max_abs, _ = metrics(t, b)
    problems = []
    t_nan, b_nan = np.isnan(t), np.isnan(b)
    t_inf, b_inf = np.isinf(t), np.isinf(b)
    if (t_nan != b_nan).any() or (t_inf != b_inf).any() or (t[t_inf] != b[b_inf]).any():
        problems.append(f"NaN/Inf differ: tested has {int(t_nan.sum())} NaN and {int(t_inf.sum())} Inf, "
                        f"bench has {int(b_nan.sum())} NaN and {int(b_inf.sum())} Inf")
    if not cosine > cosine_threshold:
        problems.append(f"cosine similarity {cosine:.6g} is not above the threshold {float(cosine_threshold)!r}")
    if not max_abs < max_abs_err_threshold:
        problems.append(f"max absolute error {max_abs:.6g} is not below the threshold {float(max_abs_err_threshold)!r}")
    if problems:
        return "error", "; ".join(problems)
    if b_nan.any() or b_inf.any():
        return "pass", "NaN/Inf at the same places on both sides; metrics over the finite elements"
    return "pass", ""


def _std_binary(t, b):
    differ = int(np.count_nonzero((t != b) & ~(np.isnan(t) & np.isnan(b))))
    d, _ = _std_finite(t, b)
    max_abs = float(np.max(d)) if d.size else 0.0
    problems = []
    if differ:
        problems.append(f"binary equality: {differ} of {t.size} elements differ (max absolute error {_std_g(max_abs)})")
    return problems, f"error_rate={_std_g(_std_ratio(differ, t.size))}"


def _std_absolute(t, b, cls, eps):
    rule = RULEBOOK["absolute"][cls]
    rtol, small, atol = rule["rtol"], rule["small"], rule["atol"]
    d, b = _std_finite(t, b)
    is_small = np.abs(b) <= small
    n_small = int(np.count_nonzero(is_small))
    n_abs = int(np.count_nonzero(is_small & (d > atol)))
    rel = d[~is_small] / (np.abs(b[~is_small]) + eps)
    n_normal, n_rel = rel.size, int(np.count_nonzero(rel > rtol))
    problems = []
    if n_rel:
        problems.append(f"absolute threshold: relative error above {_std_g(rtol)} at {n_rel} of {n_normal} normal values "
                        f"(max {_std_g(np.max(rel))})")
    if n_abs:
        problems.append(f"absolute threshold: absolute error above {_std_g(atol)} at {n_abs} of {n_small} small values "
                        f"(|bench| <= {_std_g(small)})")
    return problems, f"rel_err_ratio={_std_g(_std_ratio(n_rel, n_normal))}; abs_err_ratio={_std_g(_std_ratio(n_abs, n_small))}"


def _std_ulp(t, b, reference, cls):
    mant, min_eb = FLOAT_FORMATS[{"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}[cls]]
    rule = RULEBOOK["ulp"][cls]
    over = rule["over"]

    def stats(x):
        d, bb = _std_finite(x, b)
        _, exponent = np.frexp(np.abs(bb))
        eb = np.where(bb == 0, max(0, min_eb), np.maximum(exponent.astype(np.int64) - 1, min_eb))
        ulps = np.ldexp(d, (mant - eb).astype(np.int32))
        n = ulps.size
        if not n:
            return 0.0, 0.0, 0.0
        return float(np.max(ulps)), _std_fsum(ulps.tolist()) / n, int(np.count_nonzero(ulps > over)) / n

    max_ulp, mean, share = stats(t)
    if rule["mean_below"] is not None:
        passed = mean < rule["mean_below"] or share < rule["share_below"]
        bound = f"mean < {_std_g(rule['mean_below'])} or share < {_std_g(rule['share_below'])}"
    else:
        passed, bound = share < rule["share_below"], f"share < {_std_g(rule['share_below'])}"
    # msprobe also passes a share no larger than the reference device's (its GPU;
    # here the CPU run in the tested dtype).
    reference_share = stats(reference)[2] if reference is not None and reference.size == b.size else None
    problems = []
    if not passed and not (reference_share is not None and share <= reference_share):
        versus = f", or at most the reference's {_std_g(reference_share)}" if reference_share is not None else ""
        problems.append(f"ulp: mean {_std_g(mean)} and max {_std_g(max_ulp)} ULP, share {_std_g(share)} above {_std_g(over)} ULP "
                        f"(pass: {bound}{versus})")
    return problems, f"max_ulp={_std_g(max_ulp)}; mean_ulp={_std_g(mean)}; ulp_error_proportion={_std_g(share)}"


def _std_thousandth(t, b, eps):
    """With no value finite on both sides there is nothing to measure: a pass."""
    d, b = _std_finite(t, b)
    n = d.size
    rule = RULEBOOK["thousandth"]
    share = _std_ratio(int(np.count_nonzero(d / (np.abs(b) + eps) < rule["rtol"])), n)
    problems = []
    if n and not share > rule["share_above"]:
        problems.append(f"thousandth: share {_std_g(share)} of values within relative error {_std_g(rule['rtol'])} "
                        f"(pass: above {_std_g(rule['share_above'])})")
    return problems, f"thousandth_ratio={_std_g(share)}"


def _std_benchmark_metrics(x, b, small, atol, eps):
    """Small value error proportion, max and mean relative error, rmse of x against b."""
    d, b = _std_finite(x, b)
    is_small = np.abs(b) <= small
    svep = _std_ratio(int(np.count_nonzero(is_small & (d > atol))), int(np.count_nonzero(is_small)))
    d, b = d[~is_small], b[~is_small]
    n = d.size
    if not n:
        return [svep, 0.0, 0.0, 0.0]
    rel = d / (np.abs(b) + eps)
    return [svep, float(np.max(rel)), _std_fsum(rel.tolist()) / n, math.sqrt(_std_fsum((d * d).tolist()) / n)]


def _std_benchmark(t, b, reference, cls, eps, level):
    labels = ["small value error proportion", "max relative error", "mean relative error", "root mean squared error"]
    rule = RULEBOOK["benchmark"]
    small, atol, min_err = (rule[cls][k] for k in ("small", "atol", "floor"))
    if reference is not None and reference.size != b.size:
        reference = None
    tested = _std_benchmark_metrics(t, b, small, atol, eps)
    refs = [0.0] * 4 if reference is None else _std_benchmark_metrics(reference, b, small, atol, eps)
    bounds = [rule["small_value_bound"]] + list(level)
    status, problems, ratios = "pass", [], []
    for label, x, r, bound in zip(labels, tested, refs, bounds):
        ratio = x / max(r, min_err)
        ratios.append(ratio)
        one = "pass" if ratio <= 1 else "warning" if ratio <= bound else "error"
        if one != "pass":
            problems.append(f"benchmark: {label} {_std_g(x)} is {_std_g(ratio)} times the reference's {_std_g(r)} "
                            f"(pass <= 1, error > {_std_g(bound)})")
        status = max(status, one, key=_STD_SEVERITY.get)
    notes = [] if reference is not None else [f"no reference run in the tested dtype: ratios against the dtype's floor {_std_g(min_err)}"]
    text = "small_value_err_ratio={}; max_rel_err_ratio={}; mean_rel_err_ratio={}; rmse_ratio={}".format(*map(_std_g, ratios))
    return status, problems, notes, text


def _std_round_to(values, dtype):
    """Each value rounded to nearest (ties to even) in dtype's format, past its largest
    finite magnitude to +-Inf (the mirror of round_to in rules.rs); float64 and non-float
    dtypes unchanged."""
    if dtype not in FLOAT_FORMATS or dtype == "float64":
        return values
    mant, emin = FLOAT_FORMATS[dtype]
    largest = (2.0 - _std_ldexp1(-mant)) * _std_ldexp1(1 - emin)
    keep = np.isfinite(values) & (values != 0)
    x = np.where(keep, values, 1.0)
    _, exponent = np.frexp(np.abs(x))
    scale = np.ldexp(1.0, (np.maximum(exponent.astype(np.int64) - 1, emin) - mant).astype(np.int32))
    with np.errstate(over="ignore"):
        y = np.rint(x / scale) * scale
    y = np.where(np.abs(y) > largest, np.copysign(np.inf, y), y)
    return np.where(keep, y, values)


def _std_ldexp1(k):
    """2**k exactly for any k, 2**-1074 (the smallest subnormal) below it."""
    return float(np.ldexp(1.0, max(k, -1074)))


class _StdElementBound:
    """The rounding error bound of each element of one output: k*(u*m + eta) + ulp_d(m)/2,
    u the unit roundoff of compute, the precision the device computes in (the op class's,
    for the dtype), eta its underflow unit (half its smallest subnormal; 0 for float64,
    below every double), ulp_d the spacing of the output dtype at the magnitude m."""

    def __init__(self, magnitude, k, compute, dtype, common=None, operands=None):
        self.dtype = dtype
        # The float32 common error the op's kernel is known to leave: (epsilons, source) or None.
        self.common = common
        # The device's rounding of the operands, (k, u, source) or None: k*u*m more.
        self.operands = operands
        mant, emin = FLOAT_FORMATS.get(dtype, FLOAT_FORMATS["float32"])
        compute_mant, compute_emin = FLOAT_FORMATS.get(compute, FLOAT_FORMATS["float32"])
        self.magnitude, self.k, self.u = magnitude, float(k), _std_ldexp1(-(compute_mant + 1))
        eta = 0.0 if compute_emin - compute_mant - 1 < -1074 else _std_ldexp1(compute_emin - compute_mant - 1)
        # A NaN magnitude (an input perturbed into NaN) bounds nothing.
        m = np.where(np.isnan(magnitude), 0.0, np.abs(magnitude))
        finite = np.isfinite(m)
        _, exponent = np.frexp(np.where(finite, m, 0.0))
        e = np.where((m == 0) | ~finite, emin, np.maximum(exponent.astype(np.int64) - 1, emin))
        half_ulp = np.ldexp(1.0, np.maximum(e - mant - 1, -1074).astype(np.int32))
        extra = 0.0 if operands is None else float(operands[0]) * float(operands[1]) * m
        self.bound = self.k * (self.u * m + eta) + extra + np.where(finite, half_ulp, math.inf)

    def operands_note(self):
        """What the device's rounding of the operands adds, for a row's Message (or None)."""
        if self.operands is None:
            return None
        k, u, source = self.operands
        return f"bound plus k*u*magnitude for the operands (k={_std_g(k)}, u={_std_g(u)}: {source})"

    def ratios(self, t, b):
        """|t - b| / bound per element (0 where either side is not finite)."""
        both = np.isfinite(t) & np.isfinite(b)
        return np.where(both, np.abs(np.where(both, t - b, 0.0)) / self.bound, 0.0)


def _std_element_index(at, shape, size):
    """Element at of values shaped shape as "[i, j, ...]" (row-major), or its flat index when
    the shape does not hold size values (the mirror of element_index in rules.rs)."""
    if not shape or math.prod(shape) != size:
        return str(at)
    index = []
    for dim in reversed(shape):
        index.append(at % max(dim, 1))
        at //= max(dim, 1)
    return "[" + ", ".join(str(i) for i in reversed(index)) + "]"


def _std_rounding_bound(t, b, bound, shape=None):
    r = bound.ratios(t, b)
    beyond = int(np.count_nonzero(r > 1.0))
    positive = r > 0.0
    worst, at = 0.0, 0
    if positive.any():
        worst = float(np.max(r[positive]))
        at = int(np.flatnonzero(r == worst)[0])
    problems = []
    if beyond:
        mant, emin = FLOAT_FORMATS.get(bound.dtype, FLOAT_FORMATS["float32"])
        y = float(b[at])
        e = emin if y == 0.0 or not math.isfinite(y) else max(int(np.frexp(abs(y))[1]) - 1, emin)
        ulps = abs(float(t[at]) - y) / _std_ldexp1(e - mant)
        problems.append(f"rounding bound: {beyond} of {t.size} elements beyond k*(u*magnitude + eta) + ulp/2 "
                        f"(k={_std_g(bound.k)}, u={_std_g(bound.u)}); worst {_std_g(worst)} times the bound at element "
                        f"{_std_element_index(at, shape, t.size)}: tested {float(t[at])!r}, bench {y!r} ({_std_g(ulps)} ULPs "
                        f"of {bound.dtype}), magnitude {_std_g(bound.magnitude[at])}")
    common = _std_common_error(t, b, bound)
    if common:
        problems.append(common)
    text = (f"bound_ratio={_std_g(worst)}; beyond_bound={_std_g(_std_ratio(beyond, t.size))}; "
            f"k={_std_g(bound.k)}; u={_std_g(bound.u)}")
    notes = [bound.operands_note()] if bound.operands_note() else []
    return ("error" if problems else "pass"), problems, notes, text


def _std_known(rounding):
    """The known common error (epsilons, source) of a rounding tuple (magnitude, k, compute[,
    common[, operands]]), or None."""
    return rounding[3] if len(rounding) > 3 else None


def _std_operands(rounding):
    """The device's rounding of the operands (k, u, source) of a rounding tuple, or None."""
    return rounding[4] if len(rounding) > 4 else None


def _std_common_error(t, b, bound):
    """The rounding bound's systematic view (the mirror of systematic in
    runtime/src/standard/rules.rs): the whole tensor's common relative error rho (tested =
    bench*(1 + rho)) and its standard error, a least-squares fit in which each element counts
    by its own bound B (e/B = rho*b/B, over the finite, normal bench elements with a finite
    bound); a problem naming it when rho is beyond the rulebook's epsilons of the output dtype
    and z standard errors from 0, else None (and for a dtype class without epsilons, or fewer
    than min_elements elements effectively carrying the fit: (sum x^2)^2 / sum x^4, x = b/B)."""
    book = RULEBOOK["systematic"]
    dtype = bound.dtype
    limit = book["epsilons"][_std_class(dtype)] if dtype in FLOAT_FORMATS else None
    if limit is None:
        return None
    # A kernel known to leave more (float32 results only): its figure, and why.
    known = bound.common if bound.common is not None and dtype == "float32" and bound.common[0] > limit else None
    if known is not None:
        limit = known[0]
    mant, emin = FLOAT_FORMATS[dtype]
    w = np.broadcast_to(bound.bound, b.shape)
    # Subnormal bench values round with a relative error beyond any epsilon: left out.
    keep = np.isfinite(t) & np.isfinite(b) & (np.abs(b) >= _std_ldexp1(emin)) & np.isfinite(w) & (w > 0)
    d, x = (t - b)[keep] / w[keep], b[keep] / w[keep]
    den = _std_fsum((x * x).tolist())
    quartic = _std_fsum(((x * x) * (x * x)).tolist())
    # The elements that carry the fit (a few can carry it alone).
    if not (den > 0.0 and math.isfinite(den) and den * den / quartic >= book["min_elements"]):
        return None
    rho = _std_fsum((d * x).tolist()) / den
    r = (d - rho * x) * x
    se = math.sqrt(_std_fsum((r * r).tolist())) / den
    eps = _std_ldexp1(-mant)
    if not (abs(rho) > limit * eps and abs(rho) > book["z"] * se):
        return None
    return (f"systematic error: every element about {_std_g(rho / eps)} ULPs of {dtype} off (common relative error "
            f"{_std_g(rho)} over {d.size} elements, standard error {_std_g(se / eps)} ULPs); rounding leaves at most {_std_g(limit)}"
            + (f" (the op's kernel: {known[1]})" if known is not None else ""))


def _std_rescued(t, b, bound, rule, name="the api rule"):
    """A rule (name: the api rule, msprobe's thresholds) that is not a pass, rerun with the
    elements within the rounding bound counted as exact; the better verdict, with a note
    when the bound changed it."""
    raw = rule(t)
    if raw[0] == "pass":
        return raw
    common = _std_common_error(t, b, bound)
    if common:  # every element may be within its bound, the whole tensor is not: no rescue
        return raw[0], list(raw[1]) + [common], raw[2], raw[3]
    r = bound.ratios(t, b)
    within = (t != b) & (r <= 1.0) & np.isfinite(t) & np.isfinite(b)
    n = int(np.count_nonzero(within))
    if not n:
        return raw
    worst = float(np.max(r[within]))
    status, problems, notes, text = rule(np.where(within, b, t))
    if _STD_SEVERITY[status] >= _STD_SEVERITY[raw[0]]:
        return raw
    notes = notes + [f"{n} elements within the rounding bound counted as exact (worst {_std_g(worst)} of the bound; "
                     f"{name} alone: {raw[0]})"]
    if bound.operands_note():
        notes = notes + [bound.operands_note()]
    return status, problems, notes, text


def _std_api_rule(rule, t, b, reference, cls, eps, api):
    """One api rule's (status, problems, notes, metrics_text) of t against b."""
    if rule == "benchmark":
        return _std_benchmark(t, b, reference, cls, eps, _std_level_bounds(api))
    if rule == "binary equality":
        problems, text = _std_binary(t, b)
    elif rule == "absolute threshold":
        problems, text = _std_absolute(t, b, cls, eps)
    elif rule == "ulp":
        problems, text = _std_ulp(t, b, reference, cls)
    else:
        problems, text = _std_thousandth(t, b, eps)
    return ("error" if problems else "pass"), problems, [], text


# The note of a `bound` row judged by the api standard's rule instead.
NO_BOUND = "no rounding bound for this output: judged by the api standard"


def standard_for_row(standard, emulated):
    """The standard one row is judged by: "default" resolved by the rulebook's
    default_standard for a row whose tested side is emulated (or a device's own)."""
    if standard != "default":
        return standard
    return RULEBOOK["default_standard"]["emulated" if emulated else "recorded"]


def judge(standard, api, backward, exact_op, dtype, tested, bench, reference, cosine_threshold, max_abs_err_threshold,
          rounding=None, emulated=False, shape=None):
    """Judges one output by the precision standard ("default", "msprobe", "api" or "bound"):
    returns (status, message, rule, metrics_text). tested, bench and reference (or
    None) are 1-D float64 arrays; dtype is the tested side's canonical name;
    rounding is (magnitude, k, compute[, common[, operands]]) of the rounding bound (magnitude a 1-D float64 array
    like bench; k and the compute dtype the class's factors for the dtype), or None when the
    output has none. A magnitude that is not finite where the bench is bounds nothing.
    emulated says whether the tested side is the emulated device (a CPU run): "default"
    judges such a row by the rulebook's default_standard["emulated"], names the rule and
    its metrics in the message (the CSVs keep msprobe's nine columns there), and names an
    error of it as the dtype's own arithmetic failing. shape (or None) is the output's, for
    the element indices messages name."""
    rescue = standard == "default" and not emulated and RULEBOOK["default_standard"]["recorded_within_bound_pass"]
    status, message, rule, text = _std_judge(standard_for_row(standard, emulated), api, backward, exact_op, dtype, tested,
                                             bench, reference, cosine_threshold, max_abs_err_threshold, rounding, rescue,
                                             shape)
    if standard != "default" or not emulated:
        return status, message, rule, text
    parts = []
    if status == "error":
        overflow = int((~np.isfinite(tested)).sum()) > int((~np.isfinite(bench)).sum())
        parts.append((EMULATED_OVERFLOW if overflow else EMULATED_BEYOND_BOUND).replace("{dtype}", dtype))
    if message:
        parts.append(message)
    if rule != "cosine and max abs":
        named = EMULATED_RULE.replace("{rule}", rule)
        parts.append(f"{named} ({text})" if text else named)
    return status, "; ".join(parts), rule, text


def _std_judge(standard, api, backward, exact_op, dtype, tested, bench, reference, cosine_threshold, max_abs_err_threshold,
               rounding, rescue, shape=None):
    """judge by a resolved standard; with rescue, msprobe's thresholds are applied again with
    the elements within the rounding bound counted as exact when they fail."""
    bounded = (rounding is not None and rounding[0].size == bench.size
               and bool(np.all(np.isfinite(rounding[0]) | ~np.isfinite(bench))))
    rule = _std_rule(standard, api, backward, exact_op, dtype, bounded)
    t, b = tested, bench
    if rule == "binary equality":  # the exact result as the dtype holds it (a fill value, a cast)
        b = _std_round_to(b, dtype)
    if t.size != b.size:
        return "error", f"cannot compare: tested has {t.size} elements, bench has {b.size}", rule, ""
    if t.size == 0:
        return "pass", "empty tensor", rule, ""
    with np.errstate(all="ignore"):
        if rule == "cosine and max abs":
            def thresholds(x):
                status, message = _std_msprobe(x, b, cosine_threshold, max_abs_err_threshold)
                listed = [message] if message else []
                return (status, [], listed, "") if status == "pass" else (status, listed, [], "")

            if rescue and bounded:
                bound = _StdElementBound(rounding[0], rounding[1], rounding[2], dtype, _std_known(rounding), _std_operands(rounding))
                status, problems, notes, _ = _std_rescued(t, b, bound, thresholds, "msprobe's thresholds")
            else:
                status, problems, notes, _ = thresholds(t)
            return status, "; ".join(list(problems) + list(notes)), rule, ""
        cls = _std_class(dtype)
        eps = 2.0 ** -52 if dtype == "float64" else 2.0 ** -23
        bound = _StdElementBound(rounding[0], rounding[1], rounding[2], dtype, _std_known(rounding), _std_operands(rounding)) if bounded else None

        def api_rule(x):
            return _std_api_rule(rule, x, b, reference, cls, eps, api)

        if bound is not None and rule == "rounding bound":
            status, problems, notes, text = _std_rounding_bound(t, b, bound, shape)
        elif bound is not None and rule not in ("binary equality", "cosine and max abs"):
            status, problems, notes, text = _std_rescued(t, b, bound, api_rule)
        else:
            status, problems, notes, text = api_rule(t)
        problems, notes = list(problems), list(notes)
        if standard == "bound" and rule not in ("rounding bound", "binary equality"):
            notes.append(NO_BOUND)
        t_nan, b_nan = np.isnan(t), np.isnan(b)
        t_inf, b_inf = np.isinf(t), np.isinf(b)
        if (t_nan != b_nan).any() or (t_inf != b_inf).any() or (t[t_inf] != b[b_inf]).any():
            status = "error"
            problems.insert(0, f"NaN/Inf differ: tested has {int(t_nan.sum())} NaN and {int(t_inf.sum())} Inf, "
                               f"bench has {int(b_nan.sum())} NaN and {int(b_inf.sum())} Inf")
    return status, "; ".join(problems + notes), rule, text
