"""The sensitivity benchmark: how large a device error each standard lets through.

Plants relative errors of L machine epsilons of the output dtype (eps = 2^-mantissa:
L = 0.5, 1, 2, 4, 8 by default; about L ULPs) into every floating output of every
forward call and every input gradient of every backward call of real tensor dumps, in
three shapes, each in a copy of the dump:

- scale: every element times (1 + L*eps), the same sign (a systematic error);
- random: every element times (1 + s*L*eps), s a seeded random sign per element;
- single: one element (seeded, non-zero) times (1 + L*eps), the rest untouched.

A row whose tested side is the emulated device (the dump does not hold the call's own
value, e.g. msprobe's record of a last autograd node's gradient) is not planted: no
judge sees a plant there. Each copy, and the clean dump, is replayed natively (`msprobe replay --data-mode
real_data --standard S`); a planted call is detected when one of its planted rows is
`error`; a clean call is a false alarm when one of its rows is `error`. The report
gives, per rounding class of the op table (python/msprobe_rs/repro/_tables.py's
ROUNDING), output dtype and standard, the share of planted calls detected at each
level and shape, beside the clean calls' false alarms.

Usage (the repository root; MSPROBE_PYTHON has torch and numpy):
    $MSPROBE_PYTHON scripts/sensitivity.py [--msprobe target/release/msprobe]
        [--dumps DIR ...] [--levels 0.5,1,2,4,8] [--shapes scale,random,single]
        [--standards default,api,bound] [--out DIR]
It writes DIR/sensitivity.json (the figures), DIR/calls.json (each false alarm and each
missed plant) and prints a Markdown table (the README's figures).
"""

import argparse
import csv
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from msprobe_rs.repro._tables import DTYPE_TABLE, ROUNDING  # noqa: E402

# Mantissa bits of each float dtype (canonical name): eps = 2^-mantissa.
MANTISSA = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}
CANONICAL = {name: canon for canon, _, names in DTYPE_TABLE for name in names}
DEFAULT_DUMPS = (sorted(glob.glob(os.path.join(ROOT, "tests/fixtures/zoo/*/*/tensor")))
                 + [os.path.join(ROOT, "tests/fixtures/rounding/autocast_residual/26.2.0/tensor")]
                 + [os.path.join(ROOT, f"tests/fixtures/{d}") for d in ("npu/clean", "npu/bf16_clean", "npu_misc/clean", "ms_fused/clean",
                                                                       "ms_f16_softmax")])


# The api standard's verdicts by its rule alone, before the bound's rescue (a column of its own).
API_ALONE = "api rule alone"


def load(path):
    """A tensor file's values: torch (.pt) or numpy (.npy)."""
    if path.endswith(".npy"):
        return np.load(path)
    return torch.load(path, weights_only=True)


def save(path, value):
    if path.endswith(".npy"):
        np.save(path, value)
    else:
        torch.save(value, path)


def planted(value, level, shape, mantissa, rng):
    """value with the planted relative error, in its own dtype; None when nothing changed."""
    is_numpy = isinstance(value, np.ndarray)
    x = torch.from_numpy(np.asarray(value, dtype=np.float64)) if is_numpy else value.detach().to(torch.float64)
    flat = x.reshape(-1)
    factor = torch.ones_like(flat)
    eps = level * 2.0 ** -mantissa
    if shape == "scale":
        factor += eps
    elif shape == "random":
        factor += eps * torch.from_numpy(rng.choice([-1.0, 1.0], size=flat.numel()))
    else:
        nonzero = torch.nonzero(flat).reshape(-1)
        if nonzero.numel() == 0:
            return None
        factor[int(nonzero[rng.integers(nonzero.numel())])] += eps
    y = (flat * factor).reshape(x.shape)
    out = y.numpy().astype(value.dtype) if is_numpy else y.to(value.dtype)
    as_f64 = (lambda v: np.asarray(v, dtype=np.float64)) if is_numpy else (lambda v: v.double().numpy())
    unchanged = np.array_equal(as_f64(out), as_f64(value), equal_nan=True)
    return None if unchanged else out


def judged_tensors(dump):
    """(row name, data_name, canonical dtype) of each floating output of a forward entry
    and each input gradient (the `output` list) of a backward entry."""
    for key, entry in dump["data"].items():
        if not (key.endswith(".forward") or key.endswith(".backward")):
            continue
        outputs = entry.get("output")
        items = outputs if isinstance(outputs, list) else [outputs]
        for i, item in enumerate(items):
            if isinstance(item, dict) and item.get("data_name") and CANONICAL.get(item.get("dtype")) in MANTISSA:
                yield f"{key}.output.{i}", item["data_name"], CANONICAL[item["dtype"]]


def call_of(row):
    """`Prefix.op.N.forward` of a row `Prefix.op.N.forward.output.i`."""
    return row.split(".output.")[0]


def rounding_class(call, framework, exact):
    """The call's rounding class; "exact" for a call the bound judges by binary equality
    (views, copies, indexing: any difference is an error)."""
    if call in exact:
        return "exact"
    api = call.rsplit(".", 2)[0]
    prefixes = ("MS.", "") if framework == "mindspore" else ("",)
    for prefix in prefixes:
        entry = ROUNDING.get(prefix + api)
        if entry is not None:
            return entry[0] if entry[0] != "parts" else f"parts ({entry[1]})"
    return "other"


def replay(msprobe, framework, dump_dir, standard, out, rules=None, emulated=None, alone=None):
    """{row: status} of a native replay of dump_dir under standard; with rules (a dict),
    each row's rule (the Standard column of api and bound) is put in it; with emulated (a
    set), each row whose tested side is the emulated device (the dump does not hold the
    call's own value: a plant there is never judged) is added to it; with alone (a dict),
    each row's verdict by the api rule alone (its status, or error where the bound's rescue
    turned the rule's error into a pass) is put in it."""
    subprocess.run([msprobe, "-f", framework, "replay", "--dump", dump_dir, "--data-mode", "real_data", "--standard", standard,
                    "-o", out, "--top", "0"], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    files = glob.glob(os.path.join(out, "**", "accuracy_checking_details_*.csv"), recursive=True)
    if len(files) != 1:
        raise SystemExit(f"{dump_dir} under {standard}: {len(files)} details files in {out}")
    with open(files[0], encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    if rules is not None:
        rules.update({row["API Name"]: row.get("Standard", "") for row in rows})
    if emulated is not None:
        emulated.update(row["API Name"] for row in rows if "tested: emulated device" in row["Message"])
    if alone is not None:
        alone.update({row["API Name"]: "error" if "the api rule alone: error" in row["Message"] else row["Status"] for row in rows})
    return {row["API Name"]: row["Status"] for row in rows}


def plant_copy(src, dst, tensors, level, shape, seed):
    """A copy of the dump at src with every tensor of tensors planted; the rows planted."""
    shutil.copytree(src, dst)
    rng = np.random.default_rng(seed)
    rows = set()
    for row, data_name, dtype in tensors:
        path = os.path.join(dst, "dump_tensor_data", data_name)
        if not os.path.exists(path):
            continue
        value = planted(load(path), level, shape, MANTISSA[dtype], rng)
        if value is not None:
            save(path, value)
            rows.add(row)
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--msprobe", default=os.path.join(ROOT, "target/release/msprobe"))
    p.add_argument("--dumps", nargs="+", default=DEFAULT_DUMPS)
    p.add_argument("--levels", default="0.5,1,2,4,8")
    p.add_argument("--shapes", default="scale,random,single")
    p.add_argument("--standards", default="default,api,bound")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    levels = [float(x) for x in a.levels.split(",")]
    shapes, standards = a.shapes.split(","), a.standards.split(",")
    # (class, dtype, standard) -> {"clean": [calls, alarms], (shape, level): [planted, detected]}
    table = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    # The calls behind the figures: each false alarm and each missed plant.
    alarms, misses = [], []
    work = tempfile.mkdtemp(prefix="msprobe-sensitivity-")
    try:
        for d, dump_dir in enumerate(a.dumps):
            with open(os.path.join(dump_dir, "dump.json"), encoding="utf-8") as f:
                dump = json.load(f)
            framework = dump.get("framework") or "pytorch"
            framework = "mindspore" if framework == "mindtorch" else framework
            tensors = list(judged_tensors(dump))
            dtype_of = {row: dtype for row, _, dtype in tensors}
            name = os.path.relpath(dump_dir, ROOT)
            print(f"{name}: {len(tensors)} tensors", file=sys.stderr, flush=True)
            rules, emulated = {}, set()
            replay(a.msprobe, framework, dump_dir, "bound", os.path.join(work, f"{d}-rules"), rules, emulated)
            tensors = [t for t in tensors if t[0] not in emulated]
            # A call judged by binary equality on a floating output (an integer output says nothing).
            exact = {call_of(row) for row, rule in rules.items() if rule == "binary equality" and row in dtype_of}
            for standard in standards:
                # Under api, the rows' verdicts by the api rule alone too (before the bound's rescue).
                alone = {} if standard == "api" else None
                clean = replay(a.msprobe, framework, dump_dir, standard, os.path.join(work, f"{d}-clean-{standard}"), alone=alone)
                cleans = [(standard, clean)] + ([(API_ALONE, alone)] if alone is not None else [])
                for view, statuses in cleans:
                    calls = defaultdict(list)
                    for row, status in statuses.items():
                        calls[call_of(row)].append((row, status))
                    for call, rows in calls.items():
                        judged = [(r, s) for r, s in rows if s != "skip" and r in dtype_of]
                        if judged:
                            cell = table[(rounding_class(call, framework, exact), dtype_of[judged[0][0]], view)]["clean"]
                            cell[0] += 1
                            cell[1] += any(s == "error" for _, s in judged)
                            if any(s == "error" for _, s in judged):
                                alarms.append({"dump": name, "call": call, "standard": view})
                for shape in shapes:
                    for level in levels:
                        tag = f"{d}-{shape}-{level}-{standard}"
                        copy = os.path.join(work, tag, "dump")
                        rows = plant_copy(dump_dir, copy, tensors, level, shape, seed=d)
                        alone = {} if standard == "api" else None
                        statuses = replay(a.msprobe, framework, copy, standard, os.path.join(work, tag, "out"), alone=alone)
                        shutil.rmtree(os.path.join(work, tag))
                        views = [(standard, clean, statuses)] + ([(API_ALONE, cleans[1][1], alone)] if alone is not None else [])
                        for view, clean_view, planted_view in views:
                            by_call = defaultdict(list)
                            for row in rows:
                                # A row already an error (or skipped) in the clean replay says nothing of the plant.
                                if planted_view.get(row, "skip") != "skip" and clean_view.get(row, "skip") not in ("skip", "error"):
                                    by_call[call_of(row)].append(planted_view[row])
                            for call, got in by_call.items():
                                first = next(r for r in sorted(rows) if call_of(r) == call)
                                cell = table[(rounding_class(call, framework, exact), dtype_of[first], view)][(shape, level)]
                                cell[0] += 1
                                cell[1] += "error" in got
                                if "error" not in got:
                                    misses.append({"dump": name, "call": call, "standard": view, "shape": shape, "level": level})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report = [{"class": c, "dtype": t, "standard": s,
               "clean": {"calls": v["clean"][0], "false_alarms": v["clean"][1]},
               "planted": {f"{shape} {level:g}": {"calls": v[(shape, level)][0], "detected": v[(shape, level)][1]}
                           for shape in shapes for level in levels}}
              for (s, c, t), v in sorted(((s, c, t), v) for (c, t, s), v in table.items())]
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "sensitivity.json"), "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
        with open(os.path.join(a.out, "calls.json"), "w", encoding="utf-8") as f:
            json.dump({"false_alarms": alarms, "misses": misses}, f, indent=1)
    columns = [f"{shape} {level:g}" for shape in shapes for level in levels]
    print("| class | dtype | standard | clean calls: false alarms | " + " | ".join(columns) + " |")
    print("|---" * (4 + len(columns)) + "|")
    for r in report:
        cells = []
        for c in columns:
            n, hit = r["planted"][c]["calls"], r["planted"][c]["detected"]
            cells.append(f"{100 * hit / n:.0f} % of {n}" if n else "-")
        clean = r["clean"]
        print(f"| {r['class']} | {r['dtype']} | {r['standard']} | {clean['calls']}: {clean['false_alarms']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
