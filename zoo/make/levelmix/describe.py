"""Print what the level-mix dumps under a folder hold: for every <version>/<model>/<task>/ with a
dump.json, the top-level fields, the entry kinds (API forward/backward, Module forward/backward,
Module parameters_grad) with the keys each kind has and the keys of their tensor records, the
stack.json layout, the construct.json parents, and the names one file has and another lacks.

    python describe.py tests/fixtures/levelmix
"""
import json
import os
import re
import sys


def kind(name):
    if name.startswith("Module."):
        if re.search(r"\.parameters_grad(\.\d+)?$", name):
            return "Module parameters_grad"
        if re.search(r"\.forward\.\d+$", name):
            return "Module forward"
        if re.search(r"\.backward\.\d+$", name):
            return "Module backward"
        return "Module other"
    if name.endswith(".forward"):
        return "API forward"
    if name.endswith(".backward"):
        return "API backward"
    return "other"


def records(value):
    """The dicts with a "type" field (tensor and scalar records) inside value."""
    if isinstance(value, dict):
        if "type" in value:
            yield value
        else:
            for v in value.values():
                yield from records(v)
    elif isinstance(value, list):
        for v in value:
            yield from records(v)


def describe(folder):
    with open(os.path.join(folder, "dump.json"), encoding="utf-8") as f:
        dump = json.load(f)
    data = dump["data"]
    print(f"  top level: {sorted(k for k in dump if k != 'data')} (task={dump.get('task')}, "
          f"level={dump.get('level')}, framework={dump.get('framework')}, "
          f"dump_data_dir={'null' if dump.get('dump_data_dir') is None else 'a path'})")
    kinds = {}
    for name, entry in data.items():
        k = kinds.setdefault(kind(name), {"n": 0, "keys": set(), "tensor": set(), "example": name})
        k["n"] += 1
        k["keys"].update(entry.keys() if isinstance(entry, dict) else [type(entry).__name__])
        for r in records(entry):
            if r.get("type") == "torch.Tensor":
                k["tensor"].update(r.keys())
    for name, k in kinds.items():
        print(f"  {name}: {k['n']} entries, e.g. {k['example']}")
        print(f"    keys: {sorted(k['keys'])}")
        print(f"    tensor record keys: {sorted(k['tensor'])}")
    with open(os.path.join(folder, "stack.json"), encoding="utf-8") as f:
        stack = json.load(f)
    first = next(iter(stack.items()))
    if isinstance(first[1], list) and len(first[1]) == 2 and isinstance(first[1][0], list):
        stacked = [n for v in stack.values() for n in v[0]]
        print(f"  stack.json: {{index: [[names], [frames]]}}, {len(stack)} groups, {len(stacked)} names; "
              f"group {first[0]} = {first[1][0][:3]}{' ...' if len(first[1][0]) > 3 else ''}")
    else:
        stacked = list(stack)
        print(f"  stack.json: {{name: [frames]}}, {len(stack)} names, first {first[0]}")
    with open(os.path.join(folder, "construct.json"), encoding="utf-8") as f:
        construct = json.load(f)
    nulls = [n for n, p in construct.items() if p is None]
    print(f"  construct.json: {len(construct)} names, {len(nulls)} with a null parent")
    # stack.json holds forward names only (API and Module): compare it with the forward entries.
    forwards = [n for n in data if kind(n).endswith("forward")]
    for label, names, mine in (("construct.json", construct, list(data)), ("stack.json", stacked, forwards)):
        missing = sorted(set(mine) - set(names))
        extra = sorted(set(names) - set(data))
        if missing:
            print(f"    in dump.json{' (forward)' if label == 'stack.json' else ''}, not in {label}: {missing}")
        if extra:
            print(f"    in {label}, not in dump.json: {extra}")
    tensors = os.path.join(folder, "dump_tensor_data")
    if os.path.isdir(tensors):
        files = sorted(os.listdir(tensors))
        named = {r["data_name"] for e in data.values() for r in records(e) if "data_name" in r}
        print(f"  dump_tensor_data/: {len(files)} files, {len(named)} data_name values, "
              f"{len(named - set(files))} data_name without a file, {len(set(files) - named)} files not named")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    for dirpath, _, filenames in sorted(os.walk(root)):
        if "dump.json" in filenames:
            print(f"== {os.path.relpath(dirpath, root)}")
            describe(dirpath)


if __name__ == "__main__":
    main()
