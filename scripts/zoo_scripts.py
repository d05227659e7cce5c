"""Helper of scripts/zoo-scripts.sh: runs generated repro scripts and
classifies what they ended with.

    python zoo_scripts.py run RUNS_DIR SCRIPT...   # run each script, one forked process each
    python zoo_scripts.py report WORK_DIR          # tables of every dump under WORK_DIR

`run` imports torch (and MindSpore for scripts of a MindSpore dump) once,
then forks one child per script. The child runs the script as `__main__`,
exactly as `python SCRIPT --output-dir RUNS_DIR/<stem>` would (minus the
interpreter start and the framework imports, paid once per chunk), with its
stdout, stderr and exit status in RUNS_DIR/<stem>/{stdout,stderr,exit}.txt.
A child that crashes or hangs (ZOO_SCRIPT_TIMEOUT seconds, default 300)
takes nobody with it. Python standard library plus the frameworks only.

`report` reads WORK_DIR/<framework>/<model>/<task>/{scripts,runs} and prints,
per dump, the distinct API cases (`Prefix.op` in one direction, as the native
coverage test counts them) and how their scripts ended:

- verdict: exit 0 or 3, every row pass/warning/error;
- documented skip: exit 8, every skip row is a limit the README documents:
  the *tested* MindSpore call raised what MindSpore raises for an op its
  build has no kernel for (FRAMEWORK_LIMITS);
- other skip: any other skip row (the bench raised, inputs that cannot be
  made, rows that cannot be judged, a PyTorch tested call that raised);
- input error: exit 4;
- traceback: exit 6 (EXIT_INTERNAL), any other status (a crash, a timeout),
  or a traceback on stderr of a script that did not end in a skip (skip rows
  print the traceback of the side that raised, by design).

A case takes the worst outcome of its scripts (traceback > input error >
other skip > documented skip > verdict). Every case that is not a
verdict or a documented skip is listed with its first script and the
first line of its error.
"""

import csv
import json
import os
import re
import signal
import sys
import time

EXIT_OK, EXIT_INACCURATE, EXIT_INPUT, EXIT_INTERNAL, EXIT_SKIPPED = 0, 3, 4, 6, 8

# What MindSpore (2.10, CPU) raises for an op its build has no kernel for,
# forward or backward. A tested-side skip row whose exception matches one of
# these is a documented framework limit.
FRAMEWORK_LIMITS = [
    re.compile(r"The kernel \S+ unregistered"),
    re.compile(r"Create kernelmod for op \S+ failed"),
    re.compile(r"Unsupported op \[\S+\] on CPU"),
    re.compile(r"[Kk]ernel .*(?:not (?:registered|supported|found)|unregistered)"),
    re.compile(r"[Nn]ot support(?:ed)? .*(?:on|for) (?:the )?CPU"),
    re.compile(r"Can not (?:find|select) (?:a )?(?:valid )?kernel"),
]

OUTCOMES = ["verdict", "documented skip", "other skip", "input error", "traceback"]
RANK = {name: i for i, name in enumerate(OUTCOMES)}


# --- run ---------------------------------------------------------------------


def import_frameworks(scripts):
    """Pays the imports once, before forking: torch always, MindSpore when a
    script imports it."""
    import numpy  # noqa: F401
    import torch  # noqa: F401
    if any("import mindspore" in open(s, encoding="utf-8").read() for s in scripts):
        import mindspore  # noqa: F401
        import mindspore.mint  # noqa: F401
        import mindspore.mint.nn.functional  # noqa: F401
        import mindspore.ops  # noqa: F401


def run_child(script, run_dir, timeout):
    """In the forked child: the script as __main__; never returns."""
    import runpy
    code = EXIT_INTERNAL
    try:
        os.makedirs(run_dir, exist_ok=True)
        os.chdir(run_dir)
        out = os.open("stdout.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
        err = os.open("stderr.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
        os.dup2(out, 1)
        os.dup2(err, 2)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(timeout)
        sys.argv = [script, "--output-dir", os.path.join(run_dir, "op_result_output")]
        try:
            runpy.run_path(script, run_name="__main__")
            code = EXIT_OK
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # the script itself failed outside its own guard
            import traceback
            traceback.print_exc()
            code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def run(runs_dir, scripts):
    scripts = [os.path.abspath(s) for s in scripts]
    import_frameworks(scripts)
    timeout = int(os.environ.get("ZOO_SCRIPT_TIMEOUT", "300"))
    for script in scripts:
        stem = os.path.basename(script)[:-3]
        run_dir = os.path.abspath(os.path.join(runs_dir, stem))
        os.makedirs(run_dir, exist_ok=True)
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            run_child(script, run_dir, timeout)
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status):
            code = str(os.WEXITSTATUS(status))
        else:
            sig = os.WTERMSIG(status)
            code = "timeout" if sig == signal.SIGALRM else f"signal {sig}"
        with open(os.path.join(run_dir, "exit.txt"), "w", encoding="utf-8") as f:
            f.write(f"{code} {time.monotonic() - start:.3f}\n")


# --- report ------------------------------------------------------------------


def read_details(run_dir):
    folder = os.path.join(run_dir, "op_result_output")
    if not os.path.isdir(folder):
        return None
    files = sorted(f for f in os.listdir(folder) if f.startswith("accuracy_checking_details_"))
    if not files:
        return None
    with open(os.path.join(folder, files[-1]), encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f))
    return rows[1:]


def first_error_line(stderr):
    """The exception line of the last traceback on stderr, else its first line."""
    lines = [line.rstrip() for line in stderr.splitlines() if line.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("Traceback"):
            for line in lines[i + 1:]:
                if not line.startswith(" "):
                    return line
    return lines[0] if lines else ""


def documented(framework, message):
    if framework != "mindspore" or not message.startswith("cannot replay here: the tested call raised"):
        return False
    return any(p.search(message) for p in FRAMEWORK_LIMITS)


def classify(framework, run_dir):
    """(outcome, first error line, seconds) of one script run."""
    try:
        with open(os.path.join(run_dir, "exit.txt"), encoding="utf-8") as f:
            code, seconds = f.read().rsplit(" ", 1)
            seconds = float(seconds)
    except (OSError, ValueError):
        return "traceback", "not run", 0.0
    stderr = ""
    try:
        with open(os.path.join(run_dir, "stderr.txt"), encoding="utf-8", errors="replace") as f:
            stderr = f.read()
    except OSError:
        pass
    rows = read_details(run_dir)
    if code == str(EXIT_INPUT):
        return "input error", first_error_line(stderr), seconds
    if code in (str(EXIT_OK), str(EXIT_INACCURATE), str(EXIT_SKIPPED)) and rows is not None:
        skips = [r for r in rows if r[7] == "skip"]
        others = [r for r in skips if not documented(framework, r[8])]
        if others:
            return "other skip", others[0][8], seconds
        if skips:
            return "documented skip", skips[0][8], seconds
        if "Traceback (most recent call last)" in stderr:
            return "traceback", first_error_line(stderr), seconds
        if rows and all(r[7] in ("pass", "warning", "error") for r in rows):
            errors = [r for r in rows if r[7] == "error"]
            return "verdict", f"{errors[0][0]}: {errors[0][8]}" if errors else "", seconds
    line = first_error_line(stderr)
    return "traceback", f"exit {code}: {line}" if line else f"exit {code}", seconds


CASE = re.compile(r"^(?P<api>.+)\.(?P<n>\d+)\.(?P<dir>forward|backward)$")


def report(work):
    summary = {}
    listed = []
    inaccurate = {}  # verdict cases with an error row: worth a look (a genuine inaccuracy, or a bench that differs)
    total_seconds, total_scripts = 0.0, 0
    header = "| dump | distinct cases | verdict | documented skip | other skip | input error | traceback | scripts |"
    lines = [header, "|---|---|---|---|---|---|---|---|"]
    for framework in ("pytorch", "mindspore"):
        root = os.path.join(work, framework)
        if not os.path.isdir(root):
            continue
        for model in sorted(os.listdir(root)):
            for task in ("statistics", "tensor"):
                dump = os.path.join(root, model, task)
                scripts_dir = os.path.join(dump, "scripts")
                if not os.path.isdir(scripts_dir):
                    continue
                key = f"{framework}/{model}/{task}"
                cases = {}
                script_counts = {name: 0 for name in OUTCOMES}
                for name in sorted(os.listdir(scripts_dir)):
                    if not name.endswith(".py"):
                        continue
                    stem = name[:-3]
                    m = CASE.match(stem)
                    if not m:
                        continue
                    outcome, why, seconds = classify(framework, os.path.join(dump, "runs", stem))
                    total_seconds += seconds
                    total_scripts += 1
                    script_counts[outcome] += 1
                    case = (m["api"], m["dir"])
                    if outcome == "verdict" and why:
                        inaccurate.setdefault((key, f"{m['api']} {m['dir']}"), (stem, why))
                    prev = cases.get(case)
                    if prev is None or RANK[outcome] > RANK[prev[0]]:
                        cases[case] = (outcome, stem, why)
                if not cases:
                    continue
                counts = {name: 0 for name in OUTCOMES}
                for outcome, _, _ in cases.values():
                    counts[outcome] += 1
                summary[key] = {"cases": len(cases), **counts, "scripts": sum(script_counts.values()),
                                "script_outcomes": script_counts}
                lines.append(f"| {key} | {len(cases)} | " + " | ".join(str(counts[n]) for n in OUTCOMES)
                             + f" | {sum(script_counts.values())} |")
                for (api, direction), (outcome, stem, why) in sorted(cases.items()):
                    if outcome not in ("verdict",):
                        listed.append((key, f"{api} {direction}", outcome, stem, why))
    print("\n".join(lines))
    totals = {name: sum(s[name] for s in summary.values()) for name in ["cases"] + OUTCOMES}
    print(f"\ntotal: {totals['cases']} cases, " + ", ".join(f"{totals[n]} {n}" for n in OUTCOMES)
          + f"; {total_scripts} scripts, {total_seconds:.0f} s of script time")
    for title, documented_ in (("Documented skips", True), ("Neither a verdict nor a documented skip (to fix)", False)):
        items = [x for x in listed if (x[2] == "documented skip") == documented_]
        print(f"\n{title}: {len(items)}")
        for key, case, outcome, stem, why in items:
            print(f"- {key}: {case}: {outcome}: {stem}: {why}")
    print(f"\nVerdicts with an error row: {len(inaccurate)} cases")
    for (key, case), (stem, why) in sorted(inaccurate.items()):
        print(f"- {key}: {case}: {stem}: {why}")
    with open(os.path.join(work, "summary.json"), "w", encoding="utf-8") as f:
        json.dump({"dumps": summary, "listed": listed, "error_verdicts": [list(k) + list(v) for k, v in sorted(inaccurate.items())]},
                  f, indent=1)
    return 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "run":
        run(argv[1], argv[2:])
        return 0
    if len(argv) == 2 and argv[0] == "report":
        return report(argv[1])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
