"""Comparison and report: one details row per output (dtypes, shape, metrics,
verdict, what was compared), one result row per iteration, the exit code,
and the CSV writer (msprobe's accuracy_checking_details/result files: a
UTF-8 BOM, CRLF lines, cells a spreadsheet shows as text).
"""

import csv
import datetime
import os
import re
import tempfile
import traceback

import numpy as np

from ._tables import COMPLEX_PARTS, EXIT_INACCURATE, EXIT_OK, EXIT_SKIPPED, RULEBOOK, SELF_REFERENCE
from .data_generate import DTYPES, dtype_info, first_line
from .standard import judge, metrics

# --- msprobe-rs: the scripts inline this file from here ---


# The CSVs' columns (the rulebook's csv): msprobe's nine of the details, the two
# appended under --standard api and bound (the rule applied and its own metrics),
# msprobe's four of the result.
DETAILS_HEADER = list(RULEBOOK["csv"]["details"])
STANDARD_COLUMNS = list(RULEBOOK["csv"]["standard"])
RESULT_HEADER = list(RULEBOOK["csv"]["result"])
PASS, WARNING, SKIP, ERROR = "pass", "warning", "skip", "error"
SEVERITY = {PASS: 0, WARNING: 1, SKIP: 2, ERROR: 3}


def scalar_leaf(value):
    """Python numbers, and sequences of them, compare like tensors of their
    numpy dtype (bool, int64, float64); anything else is not comparable."""
    numbers = (bool, int, float)
    if isinstance(value, numbers) or (isinstance(value, (list, tuple)) and all(isinstance(v, numbers) for v in value)):
        array = np.array(value)
        if array.dtype.kind in "biuf":
            return type(value).__name__, array
    return type(value).__name__, None


def leaf_dtype(label, values):
    """The canonical name of a leaf's dtype: a tensor's from its label, a
    Python value's from its numpy array."""
    return dtype_info(label)[0] if label in DTYPES else values.dtype.name


def compare_leaf(call, tested_leaf_, bench_leaf_, reference, backward, opts, rounding=None):
    """One details row after the name: dtypes, shape, metrics, status, message,
    and the standard's rule and metrics (None where nothing was compared).
    call is the script: UNDEFINED_OUTPUTS, EXACT_OP, API_OP and the thresholds;
    rounding is the bench value's rounding magnitude and the factors of its bound,
    (magnitude array, factors(dtype) -> (k, compute dtype) or None), or None."""
    (t_dtype, t), (b_dtype, b) = tested_leaf_, bench_leaf_
    shape = str(tuple(b.shape)) if b is not None else "()"
    if b is not None and leaf_dtype(b_dtype, b) in COMPLEX_PARTS:
        shape = str(tuple(b.shape[:-1]))  # its (real, imaginary) pairs are the last dim

    def uncompared(status, message):
        return [b_dtype, t_dtype, shape, None, None, None, status, message, None, None]

    # Rows that cannot be judged are this tool's coverage: skips.
    if t is None or b is None:
        return uncompared(SKIP, f"cannot judge: output of type {b_dtype if b is None else t_dtype} is not comparable")
    # A complex value arrives as its (real, imaginary) pairs, judged in its parts' dtype.
    dtype = leaf_dtype(t_dtype, t)
    dtype = COMPLEX_PARTS.get(dtype, dtype)
    t, b = t.astype(np.float64), b.astype(np.float64)
    if opts.perturb and t.size:
        t = t + opts.perturb * (1.0 + np.abs(t))
    if t.shape != b.shape:
        return uncompared(SKIP, f"cannot judge: shape mismatch: tested {tuple(t.shape)}, bench {tuple(b.shape)}")
    if call.UNDEFINED_OUTPUTS and not backward:
        return [b_dtype, t_dtype, shape, None, None, None, PASS, call.UNDEFINED_OUTPUTS, "shape", None]
    if reference is not None:
        reference = reference.astype(np.float64).reshape(-1) if reference.shape == b.shape else None
    b_shape = b.shape
    t, b = t.reshape(-1), b.reshape(-1)
    cosine, max_abs, max_rel = metrics(t, b) if t.size else (None, None, None)
    # Data movement is exact forward; its gradients are sums and casts.
    exact = call.EXACT_OP and not backward
    factors = None if rounding is None else rounding[1](dtype)
    if factors is not None:
        rounding = (np.asarray(rounding[0], dtype=np.float64).reshape(-1),) + factors
    else:
        rounding = None
    # A script's tested side is the framework's own run on the machine it runs on (the CPU
    # included): a device's values, never msprobe-rs's emulation of one.
    status, message, rule, metrics_text = judge(opts.standard, call.API_OP, backward, exact, dtype, t, b, reference,
                                                call.COSINE_THRESHOLD, call.MAX_ABS_ERR_THRESHOLD, rounding=rounding,
                                                shape=tuple(b_shape))
    if opts.reference_is_tested and rule in ("benchmark", "ulp"):
        # --perturb moves the tested values only, so the reference (the tested
        # run as it came out) then differs from them and the rule can fail.
        perturbed = "the reference run is the tested run before --perturb, so this rule judges the perturbation"
        note = perturbed if opts.perturb else SELF_REFERENCE
        message = "; ".join(part for part in (message, note) if part)
    return [b_dtype, t_dtype, shape, cosine, max_abs, max_rel, status, message, rule, metrics_text]


def compare_outputs(call, direction, tested_leaves, bench_leaves, reference_leaves, opts, rounding=None):
    """One row per output; reference_leaves (the api standard's CPU run in
    the dumped dtype) may be None, and so may rounding: (per output magnitude
    array or None, factors(dtype) -> (k, u) or None), the rounding bound's parts of the bench values."""
    rows = []
    for i in range(max(len(tested_leaves), len(bench_leaves))):
        name = f"{call.API_NAME}.{direction}.output.{i}"
        if i >= len(tested_leaves) or i >= len(bench_leaves):
            message = f"cannot judge: output count differs: tested {len(tested_leaves)}, bench {len(bench_leaves)}"
            rows.append([name, None, None, None, None, None, None, SKIP, message, None, None])
            continue
        if tested_leaves[i][0] == "NoneType" and bench_leaves[i][0] == "NoneType":
            continue
        reference = reference_leaves[i][1] if reference_leaves is not None and i < len(reference_leaves) else None
        magnitude = rounding[0][i] if rounding is not None and i < len(rounding[0]) else None
        bound = None if magnitude is None else (magnitude, rounding[1])
        rows.append([name] + compare_leaf(call, tested_leaves[i], bench_leaves[i], reference, direction == "backward", opts,
                                          bound))
    return rows


def skip_row(api_name, direction, side, exc):
    """A side that raised: the call cannot be replayed here (no kernel on this
    device, an argument the framework rejects, inputs this script cannot make),
    which says nothing of its accuracy. side None: the inputs."""
    what = f"the {side} call raised" if side else "its inputs cannot be made:"
    message = f"cannot replay here: {what} {type(exc).__name__}: {first_line(exc)}"
    return [f"{api_name}.{direction}", None, None, None, None, None, None, SKIP, message, None, None]


def worst(statuses):
    return max(statuses, key=SEVERITY.__getitem__, default=None)


def result_row(api_name, forward_rows, backward_rows):
    messages = [f"{r[0]}: {r[8]}" for r in forward_rows + backward_rows if r[7] != PASS]
    return [api_name, worst(r[7] for r in forward_rows), worst(r[7] for r in backward_rows), "; ".join(messages)]


def exit_code(statuses, allow_skip):
    """Any error row: EXIT_INACCURATE; else any skip: EXIT_SKIPPED unless
    allowed; else EXIT_OK (warnings included)."""
    status = worst(statuses)
    if status == ERROR:
        return EXIT_INACCURATE
    if status == SKIP and not allow_skip:
        return EXIT_SKIPPED
    return EXIT_OK


# A number as the reports print them (-0.5, 1e-08, -inf, nan): it keeps its sign.
NUMBER = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)", re.IGNORECASE)


def cell(value):
    """A CSV cell: empty for None, repr() for floats, str() otherwise; text a
    spreadsheet would run as a formula (starting with = + - @ tab CR, not a
    number) gets a leading ' so it shows as text."""
    if value is None:
        return ""
    text = repr(value) if isinstance(value, float) else str(value)
    if text[:1] in ("=", "+", "-", "@", "\t", "\r") and not NUMBER.fullmatch(text):
        return "'" + text
    return text


def write_csv(path, header, rows):
    """Writes the whole file beside its final name, then renames it into place:
    a crash never leaves a half-written CSV."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".csv")
    try:
        with os.fdopen(fd, "w", encoding="utf-8-sig", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows([[cell(v) for v in row] for row in rows])
        os.chmod(tmp, 0o640)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_report(output_dir, details_header, details, results):
    os.makedirs(output_dir, mode=0o750, exist_ok=True)
    now = datetime.datetime.now()
    while True:  # a new pair of files per run, even within the same second
        stamp = now.strftime("%Y%m%d%H%M%S")
        result_path = os.path.join(output_dir, f"accuracy_checking_result_{stamp}.csv")
        details_path = os.path.join(output_dir, f"accuracy_checking_details_{stamp}.csv")
        if not os.path.exists(result_path) and not os.path.exists(details_path):
            break
        now += datetime.timedelta(seconds=1)
    write_csv(details_path, details_header, [row[:len(details_header)] for row in details])
    write_csv(result_path, RESULT_HEADER, results)
    return result_path, details_path


def run_side(reseed, runner, leaf, *call):
    """Runs one side and converts its results for comparison. Frameworks that
    execute lazily (MindSpore) raise only when results are read, so both steps
    sit under the same guard; a failure becomes a skip row. reseed() seeds
    the frameworks first."""
    reseed()  # same seed for both sides: random APIs (dropout) can then agree on one device
    try:
        outputs, grads = runner(*call)
        return ([leaf(x) for x in outputs], None if grads is None else [leaf(x) for x in grads]), None
    except Exception as exc:  # recorded as a skip row; the traceback helps whoever edits the script
        traceback.print_exc()
        return (None, None), exc
