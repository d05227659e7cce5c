"""Runs generated repro scripts inside one Python process and reports each
script's exit status as a JSON line.

Each script is executed as `__main__` (exactly as `python SCRIPT ARGS...`
would, minus the interpreter start and the framework imports, which are paid
once). Used by the end-to-end tests: importing torch and MindSpore takes
seconds, running one API takes milliseconds.

usage: python harness.py OUTPUT_DIR SCRIPT[::ARG::ARG...] ...
"""

import json
import os
import runpy
import sys
import traceback


def run(script, args, output_dir):
    sys.argv = [script, "--output-dir", output_dir] + args
    stdout, sys.stdout = sys.stdout, sys.stderr  # keep our stdout for the JSON lines
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        return code, ""
    except BaseException as exc:  # the script itself failed
        return 1, "".join(traceback.format_exception_only(type(exc), exc)).strip()
    finally:
        sys.stdout = stdout
    return 0, ""


def main():
    output_root = sys.argv[1]
    for index, item in enumerate(sys.argv[2:]):
        script, *args = item.split("::")
        output_dir = os.path.join(output_root, f"{index:04d}")
        code, error = run(script, args, output_dir)
        print(json.dumps({"script": script, "args": args, "code": code, "output_dir": output_dir, "error": error}), flush=True)


if __name__ == "__main__":
    main()
