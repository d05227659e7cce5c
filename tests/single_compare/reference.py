"""Reads back every workbook `msprobe single_compare` wrote and computes,
with numpy, the figures each compared row should hold: msprobe 8.3.2's
`SingleComparator.compare_arrays` on the row's two `.npy` files (float32
for floats of at most 32 bits, float64 otherwise; bf16 files are
ml_dtypes' 2-byte voids, widened here by hand).

    reference.py OUT RUN1 RUN2 [OUT_832]  ->  JSON on stdout:
    {"ours": {"<key>.xlsx": {"sheets": [names], "rows": [[cells]], "expected": [[figures] | null]}},
     "msprobe_832": {"<key>.xlsx": {"sheets": [names], "rows": [[cells]]}}}

With OUT_832, msprobe 8.3.2's own SingleComparator (on PYTHONPATH) first
compares RUN1 and RUN2 into OUT_832 (one worker process), and its
workbooks are read back too: the oracle of tests/single_compare.rs. Its
`os.listdir` is sorted while it runs, so that where 8.3.2 keeps whichever
file listdir gives last (dict entries, a rank folder's `.json` beside its
`.npy`) the choice is reproducible.
"""

import json
import os
import sys

import numpy as np
import openpyxl


def load(path):
    a = np.load(path, allow_pickle=False)
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:  # ml_dtypes bfloat16
        a = (a.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return a


def figures(p1, p2):
    a, b = load(p1), load(p2)
    single = all(x.dtype.kind == "f" and x.dtype.itemsize <= 4 for x in (a, b))
    a, b = (a.astype(np.float32), b.astype(np.float32)) if single else (a.astype(np.float64), b.astype(np.float64))
    abs_error = np.abs(a - b)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.nan_to_num(np.abs(a - b) / np.maximum(np.abs(a), np.abs(b)))
    scale = np.maximum(np.abs(a), np.abs(b))
    mismatch = np.nonzero(a.flatten() != b.flatten())[0]
    return [
        cell(np.sum(a == b) / a.size * 100),
        int(mismatch[0]) if mismatch.size else None,
        cell(np.max(abs_error)),
        cell(np.max(rel)),
        cell(np.sum(abs_error <= 0.001 * scale) / a.size * 100),
        cell(np.sum(abs_error <= 0.01 * scale) / a.size * 100),
    ]


def cell(x):
    """A figure as msprobe's pandas writes it: NaN empty, infinities as text."""
    x = float(x)
    return None if x != x else "inf" if x == float("inf") else "-inf" if x == float("-inf") else x


def find(run, tag, step, rank, micro, id_):
    base = os.path.join(run, "data", tag, f"step{step}", f"rank{rank}")
    folders = [os.path.join(base, f"micro_step{micro}")] + ([base] if micro == 0 else [])
    names = ([f"{tag}.npy"] if id_ == 0 else []) + [f"{tag}.{id_}.npy"] + ([id_] if isinstance(id_, str) else [])
    for folder in folders:
        for name in names:
            if os.path.isfile(os.path.join(folder, name)):
                return os.path.join(folder, name)
    raise SystemExit(f"no file for {tag} {step} {rank} {micro} {id_!r} in {run}")


def read(out):
    """Each workbook of `out`: its sheet names and rows (the header first)."""
    books = {}
    for name in sorted(os.listdir(out)):
        book = openpyxl.load_workbook(os.path.join(out, name))
        rows = [list(r) for ws in book.worksheets for r in ws.iter_rows(values_only=True)]
        books[name] = {"sheets": book.sheetnames, "rows": rows}
    return books


def msprobe_832(run1, run2, out):
    """msprobe 8.3.2's SingleComparator.compare on the two runs, into `out`."""
    import contextlib
    import io

    from msprobe.core.single_save.single_comparator import SingleComparator

    real_listdir = os.listdir
    os.listdir = lambda path=".": sorted(real_listdir(path))
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            SingleComparator.compare(run1, run2, out, 1)
    finally:
        os.listdir = real_listdir
    return read(out)


def main(out, run1, run2, out_832=None):
    result = {}
    for name, book in read(out).items():
        rows = book["rows"]
        tag = name[: -len(".xlsx")]
        expected = []
        for row in rows[1:]:
            if row[12] is None:
                step, rank, micro, id_ = row[:4]
                expected.append(figures(find(run1, tag, step, rank, micro, id_), find(run2, tag, step, rank, micro, id_)))
            else:
                expected.append(None)
        result[name] = {"sheets": book["sheets"], "rows": rows, "expected": expected}
    theirs = msprobe_832(run1, run2, out_832) if out_832 else None
    json.dump({"ours": result, "msprobe_832": theirs}, sys.stdout)


if __name__ == "__main__":
    main(*sys.argv[1:])
