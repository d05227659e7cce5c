#!/usr/bin/env python3
"""Scales a real msprobe dump.json up to a target number of API calls or bytes,
for benchmarks of the streaming reader and of batch generation.

The entries of the source dump are repeated; repetition r renumbers every
call counter N to N + r * STRIDE, so every key stays unique and forward and
backward entries stay paired. Written streaming (never held in memory), with
msprobe's layout and its bare NaN/Infinity tokens.

usage: make-synthetic-dump.py SOURCE_DUMP OUTPUT (--apis N | --bytes SIZE[K|M|G])
"""

import argparse
import json
import os
import sys

STRIDE = 1_000_000


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1:].upper() in units:
        return int(float(text[:-1]) * units[text[-1].upper()])
    return int(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source")
    parser.add_argument("output")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--apis", type=int, help="stop after this many forward entries")
    group.add_argument("--bytes", type=parse_size, help="stop once the file reaches this size")
    opts = parser.parse_args()

    with open(opts.source) as f:
        source = json.load(f)
    header = {k: v for k, v in source.items() if k != "data"}
    entries = []
    for key, value in source["data"].items():
        parts = key.split(".")
        if len(parts) != 4 or not parts[2].isdigit():
            continue  # module entries and the like
        entries.append((parts, json.dumps(value, indent=1)))

    tmp = opts.output + ".tmp"
    written_apis = 0
    with open(tmp, "w") as out:
        out.write(json.dumps(header, indent=1)[:-2] + ',\n "data": {\n')
        first = True
        rep = 0
        done = False
        while not done:
            for (prefix, op, n, direction), text in entries:
                key = f"{prefix}.{op}.{int(n) + rep * STRIDE}.{direction}"
                out.write(("" if first else ",\n") + f'  "{key}": {text}')
                first = False
                if direction == "forward":
                    written_apis += 1
                if (opts.apis and written_apis >= opts.apis and direction == "forward") or (opts.bytes and out.tell() >= opts.bytes):
                    done = True
                    break
            rep += 1
        out.write("\n }\n}\n")
    os.replace(tmp, opts.output)
    print(f"{opts.output}: {os.path.getsize(opts.output)} bytes, {written_apis} forward entries", file=sys.stderr)


if __name__ == "__main__":
    main()
