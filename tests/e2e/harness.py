"""Runs generated repro scripts inside one Python process and reports each
script's exit status as a JSON line.

Each script is executed as `__main__` (exactly as `python SCRIPT ARGS...`
would, minus the interpreter start and the framework imports, which are paid
once). Used by the end-to-end tests: importing torch and MindSpore takes
seconds, running one API takes milliseconds. What a script writes to
sys.stderr is reported with its status (and still shown on stderr).

usage: python harness.py OUTPUT_DIR SCRIPT[::ARG::ARG...] ...
"""

import io
import json
import os
import runpy
import sys
import traceback


class Tee(io.StringIO):
    """Keeps what is written and passes it on."""

    def __init__(self, stream):
        super().__init__()
        self.stream = stream

    def write(self, text):
        self.stream.write(text)
        return super().write(text)


def run(script, args, output_dir):
    """(exit status, the exception when the script itself failed, its stderr)."""
    sys.argv = [script, "--output-dir", output_dir] + args
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout = stderr  # keep our stdout for the JSON lines
    sys.stderr = captured = Tee(stderr)
    code, error = 0, ""
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # the script itself failed
        code, error = 1, "".join(traceback.format_exception_only(type(exc), exc)).strip()
    finally:
        sys.stdout, sys.stderr = stdout, stderr
    return code, error, captured.getvalue()


def main():
    output_root = sys.argv[1]
    for index, item in enumerate(sys.argv[2:]):
        script, *args = item.split("::")
        output_dir = os.path.join(output_root, f"{index:04d}")
        code, error, stderr = run(script, args, output_dir)
        print(json.dumps({"script": script, "args": args, "code": code, "output_dir": output_dir, "error": error,
                          "stderr": stderr}), flush=True)


if __name__ == "__main__":
    main()
