"""Summarize zoo dumps: entries, distinct forward/backward APIs, sizes.

Usage: python summarize.py <folder holding <model>/statistics/dump.json ...> [--markdown]
Needs only the Python standard library.
"""
import json
import os
import sys


def api_name(entry):
    # "Functional.conv2d.0.forward" -> "Functional.conv2d"; names may hold dots ("Torch.linalg.vector_norm.0.forward")
    parts = entry.split(".")
    return ".".join(parts[:-2]), parts[-1]


def tree_size(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            total += os.path.getsize(os.path.join(root, name))
    return total


def summarize(model_dir):
    out = {}
    with open(os.path.join(model_dir, "statistics", "dump.json"), encoding="utf-8") as f:
        data = json.load(f)["data"]
    fwd = sorted({api_name(k)[0] for k in data if api_name(k)[1] == "forward"})
    bwd = sorted({api_name(k)[0] for k in data if api_name(k)[1] == "backward"})
    out["entries"] = len(data)
    out["forward_apis"] = fwd
    out["backward_apis"] = bwd
    out["statistics_bytes"] = tree_size(os.path.join(model_dir, "statistics"))
    tdir = os.path.join(model_dir, "tensor")
    out["tensor_bytes"] = tree_size(tdir) if os.path.isdir(tdir) else 0
    tdata = os.path.join(tdir, "dump_tensor_data")
    out["tensor_files"] = len(os.listdir(tdata)) if os.path.isdir(tdata) else 0
    return out


def main():
    root = sys.argv[1]
    markdown = "--markdown" in sys.argv
    total = 0
    rows = []
    for model in sorted(os.listdir(root)):
        if not os.path.isfile(os.path.join(root, model, "statistics", "dump.json")):
            continue
        s = summarize(os.path.join(root, model))
        total += s["statistics_bytes"] + s["tensor_bytes"]
        rows.append((model, s))
    if markdown:
        print("| model | entries | forward APIs | backward APIs | statistics | tensor (files) |")
        print("|---|---|---|---|---|---|")
        for model, s in rows:
            print(f"| {model} | {s['entries']} | {len(s['forward_apis'])} | {len(s['backward_apis'])} "
                  f"| {s['statistics_bytes'] / 1024:.0f} KiB | {s['tensor_bytes'] / 1024:.0f} KiB ({s['tensor_files']}) |")
        print(f"\nTotal: {total / 1024 / 1024:.1f} MiB")
    else:
        for model, s in rows:
            print(f"== {model}: {s['entries']} entries, {len(s['forward_apis'])} forward APIs, "
                  f"{len(s['backward_apis'])} backward APIs, statistics {s['statistics_bytes']} B, "
                  f"tensor {s['tensor_bytes']} B ({s['tensor_files']} files)")
            print("   forward: " + " ".join(s["forward_apis"]))
        print(f"total {total} B")


if __name__ == "__main__":
    main()
