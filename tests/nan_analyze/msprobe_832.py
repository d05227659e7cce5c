"""Runs msprobe 8.3.2's own nan_analyze (msprobe.nan_analyze.analyzer) on
several step folders in one process: the oracle of tests/nan_analyze.rs.

    PYTHONPATH=<msprobe 8.3.2> python msprobe_832.py JOBS.json

JOBS.json is a list of {"step": DIR, "out": DIR, "listdir": [NAME, ...]}:
`listdir` is the order os.listdir gives the step folder's entries (8.3.2
takes the ranks in that order; tests pass the numeric order this tool uses,
or another one to show that 8.3.2's answer follows it). Prints one JSON list,
per job {"log": ["LEVEL message", ...], "error": null or "Type: message"}:
8.3.2's log lines without their time and pid prefix.
"""

import contextlib
import io
import json
import os
import re
import sys

from msprobe.nan_analyze.analyzer import NanAnalyzer

PREFIX = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(\d+\) \[(\w+)\] (.*)$")


def run(job):
    real_listdir = os.listdir

    def listdir(path="."):
        if os.path.realpath(path) == os.path.realpath(job["step"]):
            return list(job["listdir"])
        return real_listdir(path)

    out = io.StringIO()
    error = None
    os.listdir = listdir
    try:
        with contextlib.redirect_stdout(out):
            NanAnalyzer(job["step"], job["out"]).analyze()
    except Exception as e:  # noqa: BLE001 - the oracle's crash is an answer
        error = f"{type(e).__name__}: {e}"
    finally:
        os.listdir = real_listdir
    log = []
    for line in out.getvalue().splitlines():
        m = PREFIX.match(line)
        log.append(f"{m.group(1)} {m.group(2)}" if m else line)
    return {"log": log, "error": error}


def main():
    with open(sys.argv[1]) as f:
        jobs = json.load(f)
    json.dump([run(job) for job in jobs], sys.stdout)


if __name__ == "__main__":
    main()
