"""msprobe 8.3.2's own MindSpore op_generate, and the scripts it writes, in
one process: the oracle of tests/op_generate_832.rs.

    PYTHONPATH=<msprobe 8.3.2> python msprobe_832.py WORK CONFIG [CONFIG ...]

For each config_op.json, `msprobe -f mindspore op_generate -i CONFIG -o
WORK/<i>` (the folder made first: 8.3.2 requires it), then the one script
it wrote, run as `__main__` in that folder (it writes ./op_result_output).
Prints a JSON list, per config: {"script": its file name, "details": the
details CSV's text, "result": the result CSV's text}. The tools' own
output goes to stderr. MindSpore refuses a second
`mindspore.set_deterministic` in one process, which each script's
`seed_all` calls: after the first, the call (always `True`) is a no-op.
"""

import contextlib
import json
import os
import runpy
import sys

import mindspore
from msprobe.msprobe import main as msprobe_main

_set_deterministic = mindspore.set_deterministic


def set_deterministic_once(flag):
    if not getattr(set_deterministic_once, "done", False):
        _set_deterministic(flag)
        set_deterministic_once.done = True


mindspore.set_deterministic = set_deterministic_once


def run(config, out):
    os.makedirs(out, mode=0o750)
    sys.argv = ["msprobe", "-f", "mindspore", "op_generate", "-i", config, "-o", out]
    msprobe_main()
    (script,) = os.listdir(out)
    cwd = os.getcwd()
    os.chdir(out)
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        os.chdir(cwd)
    csvs = sorted(os.listdir(os.path.join(out, "op_result_output")))
    text = {}
    for name in csvs:
        kind = "details" if name.startswith("accuracy_checking_details_") else "result"
        with open(os.path.join(out, "op_result_output", name), encoding="utf-8-sig", newline="") as f:
            text[kind] = f.read()
    return {"script": script, **text}


def main():
    work, configs = sys.argv[1], sys.argv[2:]
    answers = []
    with contextlib.redirect_stdout(sys.stderr):
        for i, config in enumerate(configs):
            answers.append(run(os.path.abspath(config), os.path.join(work, str(i))))
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    main()
