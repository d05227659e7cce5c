"""Planted copies of a tensor dump for `replay --minimize` (tests/minimize.rs): the dump copied
(tensor files hard-linked where they can be, else copied) with one recorded tensor of each
selected call made wrong, and planted.json listing what was planted.

    python plant.py SRC DST --mode spread|confined [--where forward|backward] [--match REGEX]
                    [--per-op N] [--seed S]

SRC and DST are dump folders (dump.json and dump_tensor_data/ beside it; .pt files of PyTorch
dumps, .npy files of MindSpore and MSAdapter dumps). The calls planted are the forward entries
(or, with --where backward, the backward entries) whose `Prefix.op.N` matches REGEX, at most N of
each `Prefix.op` (default 2), first in dump order. What is planted, in the entry's output 0 (the
forward's result, or the backward's first input gradient):
- spread: every element moves by 5% of the tensor's largest |value| (the sign of each element's
  own value), an error spread over the whole output;
- confined: the elements of one position along the first dimension (chosen with the seed) move
  by 50% of the largest |value|: an error confined to one slice.
The entry's Max, Min, Mean and Norm are those of the planted tensor.
"""
import argparse
import json
import os
import random
import re
import shutil

import numpy as np
import torch


def load(path):
    if path.endswith(".npy"):
        return np.load(path).astype(np.float64)
    return torch.load(path, map_location="cpu", weights_only=True).to(torch.float64).numpy()


def save(path, array, like):
    # A new file, never the inode a hard link shares with the source.
    os.unlink(path)
    if path.endswith(".npy"):
        np.save(path, array.astype(np.load(like).dtype))
    else:
        dtype = torch.load(like, map_location="cpu", weights_only=True).dtype
        torch.save(torch.from_numpy(array).to(dtype), path)


def copy_dump(src, dst):
    os.makedirs(os.path.join(dst, "dump_tensor_data"), exist_ok=True)
    shutil.copy(os.path.join(src, "dump.json"), os.path.join(dst, "dump.json"))
    tensors = os.path.join(src, "dump_tensor_data")
    for name in sorted(os.listdir(tensors)):
        target = os.path.join(dst, "dump_tensor_data", name)
        try:
            os.link(os.path.join(tensors, name), target)
        except OSError:
            shutil.copy(os.path.join(tensors, name), target)


def planted(array, mode, rng):
    scale = float(np.max(np.abs(array))) if array.size else 0.0
    out = array.copy()
    if mode == "spread":
        out += 0.05 * scale * np.where(out >= 0, 1.0, -1.0)
    else:
        i = rng.randrange(array.shape[0]) if array.ndim else 0
        if array.ndim:
            out[i] += 0.5 * scale
        else:
            out += 0.5 * scale
    return out


def first_tensor(items):
    for item in items:
        if isinstance(item, dict) and item.get("data_name"):
            return item
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--mode", choices=["spread", "confined"], required=True)
    ap.add_argument("--where", choices=["forward", "backward"], default="forward")
    ap.add_argument("--match", default=".")
    ap.add_argument("--per-op", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    copy_dump(args.src, args.dst)
    with open(os.path.join(args.dst, "dump.json"), encoding="utf-8") as f:
        dump = json.load(f)
    # The copy's tensors are its own: found in dump_tensor_data/ beside it, not where msprobe wrote them.
    dump["dump_data_dir"] = None
    per_op, plants = {}, []
    for key, entry in dump["data"].items():
        name, _, direction = key.rpartition(".")
        op = name.rsplit(".", 1)[0]
        if direction != args.where or not re.search(args.match, name) or per_op.get(op, 0) >= args.per_op:
            continue
        tensor = first_tensor(entry.get("output", []))
        if tensor is None:
            continue
        path = os.path.join(args.dst, "dump_tensor_data", tensor["data_name"])
        array = load(path)
        if array.size < 2 or not np.all(np.isfinite(array)):
            continue
        like = os.path.join(args.src, "dump_tensor_data", tensor["data_name"])
        new = planted(array, args.mode, rng)
        save(path, new, like)
        tensor.update({"Max": float(new.max()), "Min": float(new.min()), "Mean": float(new.mean()), "Norm": float(np.linalg.norm(new))})
        per_op[op] = per_op.get(op, 0) + 1
        plants.append({"call": name, "where": f"{args.where}.output.0", "mode": args.mode})
    with open(os.path.join(args.dst, "dump.json"), "w", encoding="utf-8") as f:
        json.dump(dump, f, indent=2)
    with open(os.path.join(args.dst, "planted.json"), "w", encoding="utf-8") as f:
        json.dump(plants, f, indent=1)
    print(len(plants), "planted")


if __name__ == "__main__":
    main()
