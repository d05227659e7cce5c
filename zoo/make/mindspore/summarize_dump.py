"""Summarise msprobe dump.json files: entries, distinct forward APIs (with counts), size.

Usage: python summarize_dump.py <dump.json | folder holding dump.json> ...
Reads the bare NaN / Infinity tokens msprobe writes (Python's json accepts them).
"""
import collections
import json
import os
import re
import sys


def folder_size(path):
    total = 0
    for root, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def summarize(path):
    if os.path.isdir(path):
        path = os.path.join(path, "dump.json")
    with open(path) as f:
        data = json.load(f)["data"]
    fwd = collections.Counter()
    bwd = collections.Counter()
    for key in data:
        m = re.match(r"^(.*)\.\d+\.(forward|backward)$", key)
        if not m:
            continue
        (fwd if m.group(2) == "forward" else bwd)[m.group(1)] += 1
    size = folder_size(os.path.dirname(path))
    print(f"{path}: {len(data)} entries, {len(fwd)} distinct forward APIs "
          f"({sum(fwd.values())} calls), {len(bwd)} distinct backward APIs, {size / 1e6:.2f} MB")
    prefixes = collections.Counter(k.split(".")[0] for k in fwd)
    print("  by prefix: " + ", ".join(f"{p} {n}" for p, n in sorted(prefixes.items())))
    print("  forward: " + ", ".join(f"{k}x{n}" if n > 1 else k for k, n in sorted(fwd.items())))
    only_fwd = sorted(set(fwd) - set(bwd))
    if only_fwd:
        print("  forward only (no backward entry): " + ", ".join(only_fwd))


if __name__ == "__main__":
    for p in sys.argv[1:]:
        summarize(p)
