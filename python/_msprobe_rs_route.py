"""msprobe-rs's commands, whichever package wrote ``<env>/bin/msprobe`` last.

mindstudio-probe and msprobe-rs both install ``<env>/bin/msprobe`` and pip
lets the last one installed keep it. When it is mindstudio-probe's Python
script, the start-up line of ``msprobe_rs_route.pth`` (shipped in
msprobe-rs's wheel beside this module, read by every interpreter of the
environment) calls :func:`route` only when ``sys.argv[0]`` is named
``msprobe``; :func:`route` replaces the process with the ``msprobe-rs``
binary beside that script when the subcommand is one of msprobe-rs's, the
command line unchanged. Any other command line, and every other program,
runs as if msprobe-rs were not installed. Standard library only: ``os`` and
``sys``, which the interpreter has loaded before any ``.pth`` line runs.
From Python 3.15 (PEP 829), ``msprobe_rs_route.start`` names :func:`route`
instead, and the ``.pth``'s import line is skipped; such an interpreter
imports this module at start-up and :func:`route` returns at once for any
program not named ``msprobe``.
"""

import os
import sys

# msprobe-rs's subcommands, as `msprobe --help` lists them (tests/foreign.rs
# checks the two lists are the same).
OURS = frozenset({"op_generate", "replay", "single_compare", "nan_analyze", "config_check", "result_change"})

# The name of the binary beside the `msprobe` script, always msprobe-rs's.
BINARY = "msprobe-rs"


def subcommand(args):
    """The subcommand of an ``msprobe`` command line (``args`` without the
    program name): the first word after ``-f``/``--framework`` and its value
    however spelt; None when another option comes first or there is none."""
    i = 0
    while i < len(args):
        word = args[i]
        if word in ("-f", "--framework"):
            i += 2
        elif word.startswith("--framework=") or (word.startswith("-f") and not word.startswith("--")):
            i += 1
        elif word.startswith("-"):
            return None
        else:
            return word
    return None


def route(argv=None, execv=os.execv):
    """Runs msprobe-rs for msprobe-rs's subcommands of the ``msprobe`` script
    ``argv[0]`` (default ``sys.argv``), by ``execv`` of the ``msprobe-rs``
    beside it with the same arguments; returns doing nothing otherwise,
    and when that binary is missing or cannot start (one line on stderr)."""
    argv = sys.argv if argv is None else argv
    if not argv or os.path.basename(argv[0]) != "msprobe" or subcommand(argv[1:]) not in OURS:
        return
    binary = os.path.join(os.path.dirname(argv[0]), BINARY)
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        return
    try:
        execv(binary, [argv[0]] + list(argv[1:]))
    except OSError as e:
        sys.stderr.write(f"msprobe-rs: cannot run {binary} ({e}); mindstudio-probe's msprobe answers instead\n")
