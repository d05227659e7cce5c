"""SingleComparator: compares two SingleSave dumps by running the msprobe-rs
binary, ``msprobe single_compare DIR1 DIR2 -o OUT -j N``, which writes one
``{key}.xlsx`` per key as msprobe 8.3.2's Python comparator did."""

import os
import shutil
import subprocess
import sys
import sysconfig

_EXE = "msprobe.exe" if os.name == "nt" else "msprobe"


class MsprobeError(RuntimeError):
    """The msprobe binary failed. ``str(e)`` is its error line;
    ``returncode``, ``stderr`` (all of it) and ``cmd`` are attributes."""

    def __init__(self, message, returncode=None, stderr="", cmd=None):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr
        self.cmd = cmd


def _is_script(path):
    """A "#!" script: the console script of Huawei's Python msprobe (also
    named `msprobe`), not the msprobe-rs binary."""
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return True


def _executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_binary():
    """The msprobe-rs binary: env MSPROBE_BIN (taken as it is), else `msprobe`
    inside this package (msprobe_rs/bin/), else `msprobe` or its alias
    `msprobe-rs` in this Python's scripts folder (where the wheel puts both),
    else `msprobe` or `msprobe-rs` on PATH; "#!" scripts (Huawei's msprobe)
    are passed over.
    Raises FileNotFoundError with one line saying what to do."""
    env = os.environ.get("MSPROBE_BIN")
    if env:
        if not _executable(env):
            raise FileNotFoundError(f"msprobe_rs: MSPROBE_BIN={env!r} is not an executable file")
        return env
    candidates = [
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", _EXE),
        os.path.join(sysconfig.get_path("scripts"), _EXE),
        os.path.join(sysconfig.get_path("scripts"), _EXE.replace("msprobe", "msprobe-rs")),
        shutil.which("msprobe"),
        # cargo install puts the alias beside `msprobe`; mindstudio-probe's
        # script may hold `msprobe` earlier on PATH.
        shutil.which("msprobe-rs"),
    ]
    skipped = []
    for c in candidates:
        if not c or not _executable(c):
            continue
        if _is_script(c):
            if c not in skipped:
                skipped.append(c)
            continue
        return c
    note = f" (passed over {', '.join(skipped)}: a script, not the msprobe-rs binary)" if skipped else ""
    raise FileNotFoundError(
        "msprobe_rs: the msprobe-rs binary `msprobe` was not found: set MSPROBE_BIN to its path or put it on PATH "
        f"(cargo install --path . in the msprobe-rs repository){note}"
    )


def _arg_path(p):
    p = os.fspath(p)
    # A path starting with "-" would be read as a flag.
    return os.path.join(".", p) if p.startswith("-") else p


def _error_line(stderr):
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("msprobe: error:") or line.startswith("error:"):
            return line
    return lines[-1] if lines else ""


class SingleComparator:
    """msprobe 8.3.2's comparator API; the work is done by the Rust binary."""

    result_header = [
        'step',
        'rank',
        'micro_step',
        'id',
        'shape1',
        'shape2',
        '相同元素百分比(%)',
        '首个不匹配元素索引',
        '最大绝对误差',
        '最大相对误差',
        '误差在千分之一内元素占比(%)',
        '误差在百分之一内元素占比(%)',
    ]

    @classmethod
    def compare(cls, dir1, dir2, output_path="./msprobe_compare_output", num_processes=8):
        """Compares the dumps under dir1 and dir2 (each a SingleSave dump_path)
        and writes {output_path}/{key}.xlsx. Raises MsprobeError when the
        binary fails (its error line is the message)."""
        if isinstance(num_processes, bool) or not isinstance(num_processes, int):
            raise TypeError(f"SingleComparator: num_processes must be an int, got {num_processes!r}")
        binary = find_binary()
        cmd = [binary, "single_compare", _arg_path(dir1), _arg_path(dir2), "-o", _arg_path(output_path), "-j", str(num_processes)]
        sys.stdout.flush()
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        stderr = proc.stderr.decode("utf-8", errors="replace")
        if proc.returncode != 0:
            line = _error_line(stderr) or f"msprobe single_compare exited with code {proc.returncode}"
            raise MsprobeError(line, proc.returncode, stderr, cmd)
        if stderr:
            sys.stderr.write(stderr)  # warnings
