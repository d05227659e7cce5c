"""Print what the MindSpore level-mix dumps hold: for every <task>/ folder under the given folder,
the top-level fields, the entry kinds (API forward/backward by prefix, Cell forward/backward,
parameters_grad) with their keys and one abbreviated example, and the stack.json / construct.json
layouts.

    python describe.py tests/fixtures/levelmix_ms/26.2.0/ms_small_net
"""
import json
import os
import re
import sys


def kind(name):
    if re.search(r"\.parameters_grad(\.\d+)?$", name):
        return "parameters_grad"
    if name.startswith("Cell."):
        m = re.search(r"\.(forward|backward)\.\d+$", name)
        return f"Cell {m.group(1)}" if m else "Cell other"
    m = re.search(r"\.(forward|backward)$", name)
    if m:
        return f"API {name.split('.')[0]} {m.group(1)}"
    return "other"


def short(value, depth=0):
    """Abbreviate an entry: lists cut to 2 items, floats rounded."""
    if isinstance(value, dict):
        return {k: short(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        out = [short(v, depth + 1) for v in value[:2]]
        return out + ([f"... {len(value) - 2} more"] if len(value) > 2 else [])
    if isinstance(value, float):
        return round(value, 4)
    return value


def describe(folder):
    print(f"== {folder}")
    with open(os.path.join(folder, "dump.json"), encoding="utf-8") as f:
        dump = json.load(f)
    data = dump["data"]
    print(f"  top level: { {k: v for k, v in dump.items() if k != 'data'} }")
    kinds = {}
    for name, entry in data.items():
        k = kinds.setdefault(kind(name), {"n": 0, "keys": set(), "example": (name, entry)})
        k["n"] += 1
        k["keys"].update(entry.keys() if isinstance(entry, dict) else [type(entry).__name__])
    for name, k in sorted(kinds.items()):
        print(f"  {name}: {k['n']} entries, keys {sorted(k['keys'])}")
        print(f"    e.g. {json.dumps({k['example'][0]: short(k['example'][1])})[:700]}")
    print("  all names:", list(data))
    with open(os.path.join(folder, "stack.json"), encoding="utf-8") as f:
        stack = json.load(f)
    first = next(iter(stack.items()))
    print(f"  stack.json: {len(stack)} keys; first {json.dumps(short(first))[:400]}")
    with open(os.path.join(folder, "construct.json"), encoding="utf-8") as f:
        construct = json.load(f)
    print(f"  construct.json: {len(construct)} names; {json.dumps(construct)[:1500]}")


for root in sys.argv[1:]:
    for task in sorted(os.listdir(root)):
        if os.path.isfile(os.path.join(root, task, "dump.json")):
            describe(os.path.join(root, task))
