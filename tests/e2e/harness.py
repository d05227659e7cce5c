"""Runs generated repro scripts, each in a process of its own, and reports
each script's exit status as a JSON line.

The frameworks are imported once, here; then each script runs in a child
forked from this process, as `__main__` (exactly as `python SCRIPT ARGS...`
would, minus the interpreter start and the imports): nothing a script
changes (torch's default dtype, seeds, MindSpore's context, imported
modules) reaches the next one. Used by the end-to-end tests: importing
torch and MindSpore takes seconds, running one API takes milliseconds. The
scripts start in an order shuffled by MSPROBE_E2E_SEED (default 0; the seed
is printed on stderr), as many at once as MSPROBE_E2E_JOBS says (default:
the cores this process may use), each writing under a folder of its own;
the lines come in the order the scripts end, and each carries the script's
position in the command line (`index`). What a script writes to sys.stderr is reported with
its status (and still shown on stderr).

usage: python harness.py OUTPUT_DIR SCRIPT[::ARG::ARG...] ...
"""

import collections
import importlib
import io
import json
import os
import random
import runpy
import selectors
import sys
import traceback

# Imported before the children fork, when this Python has them (MSAdapter's
# environment imports mindtorch in each script, after the fork).
PRELOADED = ("numpy", "torch", "mindspore")


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


def preload():
    """Imports the frameworks this Python has, once for every child."""
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def start_child(script, args, output_dir):
    """Forks a child that runs run() and sends its result through a pipe;
    (pid, the pipe's read end)."""
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: run, send the result, leave without cleanup
        os.close(read_end)
        try:
            result = run(script, args, output_dir)
        except BaseException as exc:  # the harness itself failed in the child
            result = (1, f"harness: {exc!r}", "")
        with os.fdopen(write_end, "w") as pipe:
            json.dump(result, pipe)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    os.close(write_end)
    return pid, read_end


def finish_child(pid, text):
    """The child's result, once its pipe is closed: reaps it."""
    _, status = os.waitpid(pid, 0)
    if not text:
        return 1, f"the script's process died (wait status {status})", ""
    return tuple(json.loads(text))


def jobs():
    """How many scripts run at once: MSPROBE_E2E_JOBS, else the cores this
    process may use."""
    return max(1, int(os.environ.get("MSPROBE_E2E_JOBS", "0")) or len(os.sched_getaffinity(0)))


def main():
    output_root = sys.argv[1]
    seed = int(os.environ.get("MSPROBE_E2E_SEED", "0"))
    order = list(enumerate(sys.argv[2:]))
    random.Random(seed).shuffle(order)
    width = jobs()
    print(f"harness: {len(order)} scripts in an order shuffled by MSPROBE_E2E_SEED={seed}, {width} at a time", file=sys.stderr)
    preload()
    waiting = collections.deque(order)
    running = {}  # read end -> [index, script, args, output_dir, pid, chunks]
    with selectors.DefaultSelector() as selector:
        while waiting or running:
            while waiting and len(running) < width:
                index, item = waiting.popleft()
                script, *args = item.split("::")
                output_dir = os.path.join(output_root, f"{index:04d}")
                pid, fd = start_child(script, args, output_dir)
                running[fd] = [index, script, args, output_dir, pid, []]
                selector.register(fd, selectors.EVENT_READ)
            for key, _ in selector.select():
                fd = key.fd
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    running[fd][5].append(chunk)
                    continue
                selector.unregister(fd)
                os.close(fd)
                index, script, args, output_dir, pid, chunks = running.pop(fd)
                code, error, stderr = finish_child(pid, b"".join(chunks).decode())
                print(json.dumps({"index": index, "seed": str(seed), "script": script, "args": args, "code": code,
                                  "output_dir": output_dir, "error": error, "stderr": stderr}), flush=True)


if __name__ == "__main__":
    main()
