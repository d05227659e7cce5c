"""MSAdapter's torch and the real torch in one process: the tested side of a
script for an MSAdapter (mindtorch) dump calls MSAdapter's torch API, the
bench the real torch, and both are imported as ``torch``. This file comes
first in such a script's machinery and binds ``msadapter`` and ``torch`` for
the rest (torch_exec's tables are made from the real torch's dtypes).

MSAdapter is found either way it is installed:

- as the ``mindtorch`` package (``mindtorch.torch``), beside the real torch;
- enabled through ``PYTHONPATH`` (its folder that holds MSAdapter's
  ``torch/`` package, msprobe's op_generate document, doc 33 §2): then
  ``import torch`` is MSAdapter's, and the real one is found as msprobe
  8.3.2's script does, by taking the shadowing folder off ``sys.path``,
  dropping the ``torch`` modules and importing ``torch`` again (then
  ``sys.path`` is put back). MSAdapter's own modules stay loaded under
  ``mindtorch.torch.*``; the scripts take its functions as attributes of its
  torch module (mindtorch 0.4.0 loads a second, broken ``torch.nn`` when
  ``torch.nn.functional`` is imported by name in that mode).

When either cannot be imported the script prints one line naming what is
missing and exits with EXIT_INTERNAL (the script cannot run in this Python).
"""

import importlib
import os
import sys

import mindspore

from ._tables import EXIT_INTERNAL

# --- msprobe-rs: the scripts inline this file from here ---


# How many folders may shadow the real torch (msprobe's MAX_RECURSION_DEPTH).
SHADOWING_ROUNDS = 20
MSADAPTER_HINT = ("install MSAdapter (tested: pip install mindtorch==0.4.0 with mindspore-dev==2.6.0.dev20250323), "
                  "or put its folder that holds its torch package on PYTHONPATH")


class MissingTorch(Exception):
    """MSAdapter's torch or the real torch cannot be imported here."""


def is_msadapter(module):
    """Whether a module imported as torch is MSAdapter's (its tensors are MindSpore's)."""
    return isinstance(module.tensor(0.0), mindspore.Tensor)


def first_error_line(exc):
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"


def no_real_torch(exc):
    return MissingTorch(f"the real torch (the bench) is not importable besides MSAdapter's ({first_error_line(exc)}): "
                        "install torch")


def drop_torch_modules():
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
        del sys.modules[name]


def unshadowed_torch():
    """The real torch, where MSAdapter's torch shadows it on sys.path."""
    saved_path = list(sys.path)
    try:
        for _ in range(SHADOWING_ROUNDS):
            shadowing = importlib.import_module("torch")
            if not is_msadapter(shadowing):
                return shadowing
            folder = os.path.dirname(os.path.dirname(os.path.realpath(shadowing.__file__)))
            sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != folder]
            drop_torch_modules()
        raise MissingTorch(f"the real torch (the bench): MSAdapter's torch still shadows it after {SHADOWING_ROUNDS} folders")
    except ImportError as exc:
        raise no_real_torch(exc) from None
    finally:
        sys.path[:] = saved_path


def import_torches():
    """(MSAdapter's torch, the real torch): ``import torch`` first; when that is
    MSAdapter's (PYTHONPATH), the real torch from behind it, else MSAdapter's
    as ``mindtorch.torch``. MissingTorch says which one is missing."""
    try:
        first, no_torch = importlib.import_module("torch"), None
    except ImportError as exc:
        first, no_torch = None, exc
    if first is not None and is_msadapter(first):
        return first, unshadowed_torch()
    try:
        msadapter = importlib.import_module("mindtorch.torch")
    except ImportError as exc:
        raise MissingTorch(f"MSAdapter's torch (the tested side) is not importable ({first_error_line(exc)}): "
                           f"{MSADAPTER_HINT}") from None
    if first is None:
        raise no_real_torch(no_torch)
    return msadapter, first


def torches_or_exit():
    """import_torches(), or one line on stderr and EXIT_INTERNAL."""
    try:
        return import_torches()
    except MissingTorch as missing:
        print(f"error: cannot run here: {missing}", file=sys.stderr)
        sys.exit(EXIT_INTERNAL)


# MSAdapter's torch (the tested calls) and the real torch (the bench), for the rest of the machinery.
msadapter, torch = torches_or_exit()
