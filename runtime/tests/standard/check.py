"""Runs the Python mirror of the precision standards on every shared case.

Usage: check.py CASES_JSON PYTHON_DIR. Imports judge from the scripts'
machinery (msprobe_rs.repro.standard, under PYTHON_DIR: the repository's
python/ folder) and prints a JSON list of {name, status, message, rule, metrics}.
"""
import json
import math
import sys

import numpy as np

NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def array(values):
    return np.array([NONFINITE[v] if isinstance(v, str) else float(v) for v in values], dtype=np.float64)


def main(cases_path, python_dir):
    sys.path.insert(0, python_dir)
    from msprobe_rs.repro.standard import judge

    with open(cases_path, encoding="utf-8") as f:
        cases = json.load(f)
    results = []
    for c in cases:
        reference = None if c["reference"] is None else array(c["reference"])
        magnitude = c.get("magnitude")
        common = tuple(c["common_error"]) if c.get("common_error") else None
        operands = tuple(c["operands"]) if c.get("operands") else None
        rounding = None if magnitude is None else (array(magnitude), c["k"], c["compute"], common, operands)
        status, message, rule, metrics = judge(
            c["standard"], c["api"], c["backward"], c["exact_op"], c["dtype"], array(c["tested"]), array(c["bench"]),
            reference, c["cosine_threshold"], c["max_abs_err_threshold"], rounding=rounding, emulated=c.get("emulated", False),
            shape=c.get("shape"))
        results.append({"name": c["name"], "status": status, "message": message, "rule": rule, "metrics": metrics})
    json.dump(results, sys.stdout, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])
