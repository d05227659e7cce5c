"""One home for what a ResultChange step file holds per value, whichever
framework computed it: a float as strict JSON, and a parameter's entry."""

import math


def json_float(x):
    """A float as strict JSON takes it (serde_json has no NaN token): null when not
    finite; the exact value, NaN and infinities included, is in the *_hex key."""
    return x if math.isfinite(x) else None


def param_entry(digest, dtype, shape, stats):
    """A gradient's entry: the sha256 of its bytes, dtype, shape and its
    max, min, mean, norm (``stats``: four floats, or None for an empty one)."""
    values = [None] * 4 if stats is None else [json_float(float(v)) for v in stats]
    return {"hash": digest, "dtype": dtype, "shape": shape, "max": values[0], "min": values[1], "mean": values[2], "norm": values[3]}


NO_GRADIENT = {"hash": "none", "dtype": None, "shape": None, "max": None, "min": None, "mean": None, "norm": None}
