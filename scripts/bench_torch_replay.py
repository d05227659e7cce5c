"""Torch doing the work of `msprobe replay --dump DUMP --data-mode real_data`, for the real-size
benchmark (scripts/bench-real-size.sh): every call of a tensor dump.json replayed with torch on the
CPU from the same tensor files.

    python scripts/bench_torch_replay.py DUMP.json [--threads N] [--classes] [--random] [--print-classes]
                                          [--passes N] [--same-work DETAILS.csv]

For each forward entry (with its backward entry when the dump has one): every tensor file the call
names is read (torch.load: inputs, recorded outputs, gradients), or with --random (a statistics
dump: `replay --data-mode random_data`) a random tensor of each recorded shape made, then

- bench: the call in float64, forward and backward (torch.autograd.grad with the dumped output
  gradients), as the native bench runs it;
- device: the same call in the dumped dtypes, forward and backward (what `replay --emulate` adds).

With --same-work (the details CSV of `replay --dump DUMP` with the default standard), torch does
instead the work that standard adds to read + bench, and times only it: for each call with a row
judged on an emulated device, the device run (not with --random, whose figures hold it); for each
such call and each call with a row judged again within the rounding bound (an `error`, or a row
the bound passed), the rounding magnitudes as runtime/src/replay/magnitude.rs computes them by the op's rounding class (python/msprobe_rs's ROUNDING, the op table's): the op on
absolute values with |dy| (terms, sums), the backward of |dy| (selects), two runs per float input
(smooth), six per float input, four along dy and a float32 probe (composite), and for a formula's
parts (parts) its rest's runs only: the formula itself is left out (the package computes it in
NumPy, not at torch's speed), so torch's side is the smaller there.

The ops are the PyTorch callables of the API names (`Functional.x` is torch.nn.functional.x,
`Tensor.x` torch.Tensor.x, `Torch.x` torch.x); an in-place method runs on a copy, forward only.
Each API's first call runs once untimed first (torch sets its kernels up on first use), as
--same-work's calls do in a first untimed pass. With --passes N the calls are timed N times, and
each time is its median over the passes (a class of one or two calls of a few milliseconds moves by
half between passes); the peaks are the first pass's (the process's high-water mark grows over
later passes). Prints one line per figure (read, bench, device, total: seconds and calls/s; tensor bytes read;
the process's CPU seconds; its peak resident memory, and what it held before the first call: torch's
libraries), with --classes the seconds and peak memory of each op class (CLASSES), and a last line
of JSON with the same figures. The peak of each call is the process's high-water mark, reset before
the call (Linux's /proc/self/clear_refs), so a class's peak is the largest of its calls'.
"""
import argparse
import csv
import json
import os
import re
import sys
import time
from statistics import median

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from msprobe_rs.repro.magnitude import rounding_of  # noqa: E402  (the op table's rounding classes)

# The op classes of the per-class figures, by op name (the part after the prefix); a name in none
# is "elementwise/activations". `--print-classes` prints them as `NAME<TAB>REGEX`, the regex
# matching msprobe's `Prefix.op.N` names, for `replay --filter` (scripts/bench-real-size.sh).
CLASSES = [
    ("conv", ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d"]),
    ("norms", ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm"]),
    ("pooling", ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
                 "adaptive_max_pool2d"]),
    ("matmul/linear", ["linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "__matmul__", "einsum"]),
    ("attention", ["scaled_dot_product_attention"]),
    ("softmax", ["softmax", "log_softmax"]),
    ("losses", ["cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy",
                "binary_cross_entropy_with_logits"]),
    ("reductions", ["sum", "mean", "var", "std", "norm", "max", "min", "amax", "amin", "argmax", "cumsum", "prod"]),
    ("embedding/indexing", ["embedding", "index_select", "gather", "scatter", "__getitem__", "__setitem__", "masked_fill",
                            "where", "take_along_dim", "index_add_"]),
]
OTHER = "elementwise/activations"
DTYPES = {f"torch.{n}": getattr(torch, n) for n in ("float64", "float32", "float16", "bfloat16", "int64", "int32", "bool", "uint8")}


def op_class(api):
    op = api.split(".", 1)[1]
    for name, ops in CLASSES:
        if op in ops:
            return name
    return OTHER


def class_filters(apis):
    """Each class that `apis` (`Prefix.op` names) have calls of, with the regex of their `Prefix.op.N`
    names (Rust's regex has no lookahead: a class is the list of its names in the dump)."""
    rows = []
    for name in [c for c, _ in CLASSES] + [OTHER]:
        members = sorted({a for a in apis if op_class(a) == name})
        if members:
            rows.append((name, r"^(" + "|".join(re.escape(a) for a in members) + r")\.[0-9]+$"))
    return rows


def callable_of(api):
    prefix, op = api.split(".", 1)
    if prefix == "Functional":
        return getattr(F, op)
    if prefix == "Tensor":
        return getattr(torch.Tensor, op)
    if prefix == "Torch":
        return getattr(torch, op)
    raise ValueError(f"{api}: no torch callable for prefix {prefix}")


class Files:
    """The tensor files of one call, each read once, with the bytes read and the time taken."""

    def __init__(self, folder, random=False):
        self.folder, self.bytes, self.seconds, self.cpu, self.random = folder, 0, 0.0, 0.0, random

    def random_tensor(self, spec):
        """--random: a tensor of the recorded shape and dtype (floats normal, integers within the
        recorded Min and Max), generated as the native random_data replay does; timed as reading."""
        start, cpu = time.perf_counter(), time.process_time()
        dtype, shape = DTYPES[spec["dtype"]], spec.get("shape", [])
        if dtype.is_floating_point:
            t = torch.randn(shape, dtype=torch.float64).to(dtype)
        elif dtype == torch.bool:
            t = torch.randint(0, 2, shape).bool()
        else:
            lo, hi = int(spec.get("Min") or 0), int(spec.get("Max") or 0)
            t = torch.randint(lo, hi + 1, shape, dtype=dtype)
        self.seconds += time.perf_counter() - start
        self.cpu += time.process_time() - cpu
        return t

    def load(self, name):
        path = os.path.join(self.folder, name)
        start, cpu = time.perf_counter(), time.process_time()
        t = torch.load(path, weights_only=True)
        self.seconds += time.perf_counter() - start
        self.cpu += time.process_time() - cpu
        self.bytes += os.path.getsize(path)
        return t


def decode(v, files):
    """A dump value as the argument it stands for; tensors read from their file."""
    if isinstance(v, list):
        return [decode(x, files) for x in v]
    if v is None:
        return None
    kind = v.get("type")
    if kind == "torch.Tensor" and files.random:
        return files.random_tensor(v)
    if kind == "torch.Tensor":
        return files.load(v["data_name"]) if "data_name" in v else None
    if kind == "torch.dtype":
        return DTYPES[v["value"]]
    if kind == "torch.memory_format":
        return torch.preserve_format
    return v.get("value")


def tensors_in(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in tensors_in(item)]
    return []


def marked(entry):
    """Which top-level tensor inputs are differentiated (as the native replay decides)."""
    specs = list(entry.get("input_args", [])) + list(entry.get("input_kwargs", {}).values())
    specs = [s for s in specs if isinstance(s, dict) and s.get("type") == "torch.Tensor"]
    any_marked = any(s.get("requires_grad") for s in specs)
    return lambda s: (not any_marked) or bool(s.get("requires_grad"))


def side(dtype_of, fn, in_place, args, kwargs, entry, grads):
    """One side: the call forward (and backward with `grads`) with floating tensors cast by dtype_of."""
    wanted = marked(entry)
    leaves = []

    def prepare(x, spec):
        if isinstance(x, list):
            return [prepare(i, s if isinstance(s, dict) else None) for i, s in zip(x, spec if isinstance(spec, list) else [None] * len(x))]
        if isinstance(x, torch.Tensor):
            x = x.to(dtype_of(x.dtype)) if x.is_floating_point() else x
            if in_place:
                return x.clone()
            if grads is not None and x.is_floating_point() and (spec is None or wanted(spec)):
                x = x.detach().requires_grad_(True)
                leaves.append(x)
            return x
        return x

    a = [prepare(x, s) for x, s in zip(args, entry.get("input_args", []))]
    k = {n: prepare(x, entry["input_kwargs"][n]) for n, x in kwargs.items()}
    with torch.set_grad_enabled(grads is not None):
        out = fn(*a, **k)
    if grads is None or not leaves:
        return
    outs = tensors_in(out)
    pairs = [(o, g.to(o.dtype)) for o, g in zip(outs, grads) if g is not None and o.requires_grad]
    if pairs:
        torch.autograd.grad([o for o, _ in pairs], leaves, [g for _, g in pairs], allow_unused=True)


def magnitude_runs(api, fn, in_place, args, kwargs, entry, grads):
    """The rounding magnitudes' runs of one call, as the native default standard makes them
    (runtime/src/replay/magnitude.rs, by the op's rounding class); the values are not kept."""
    rounding = rounding_of(api, [""])
    if rounding is None or in_place:
        return
    kind, f64 = rounding[0], (lambda d: torch.float64)

    def mapped(f, only=None):
        """args and kwargs with f applied to the float tensors of slot `only` (all when None)."""
        def go(x):
            if isinstance(x, list):
                return [go(i) for i in x]
            return f(x) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
        a = [go(x) if only in (None, i) else x for i, x in enumerate(args)]
        k = {n: go(x) if only in (None, len(args) + i) else x for i, (n, x) in enumerate(kwargs.items())}
        return a, k

    def on_grads(f):
        return None if grads is None else [None if g is None else f(g.to(torch.float64)) for g in grads]

    def first_order(patterns):
        slots = [i for i, x in enumerate(list(args) + list(kwargs.values())) if tensors_in(x) and any(t.is_floating_point() for t in tensors_in(x))]
        for j in slots:
            for sign in patterns:
                for h in (2.0 ** -20, -(2.0 ** -20)):
                    side(f64, fn, in_place, *mapped(lambda t: t.to(torch.float64) * (1 + h * sign(t)), j), entry, grads)

    def uniform(t):
        return 1.0

    def alternating(t):
        return torch.ones(t.numel(), dtype=torch.float64).index_fill_(0, torch.arange(1, t.numel(), 2), -1.0).reshape(t.shape)

    def composite():
        first_order([uniform, alternating, alternating])  # Thue-Morse's signs cost what alternating ones do
        if grads is not None:
            for _ in range(2):
                for h in (2.0 ** -20, -(2.0 ** -20)):
                    side(f64, fn, in_place, args, kwargs, entry, on_grads(lambda g: g * (1 + h * alternating(g))))
        if not any(t.dtype == torch.float64 for x in list(args) + list(kwargs.values()) for t in tensors_in(x)):
            side(lambda d: torch.float32, fn, in_place, args, kwargs, entry, grads)

    if kind in ("terms", "sums"):
        side(f64, fn, in_place, *mapped(torch.abs), entry, on_grads(torch.abs))
    elif kind == "selects":
        side(f64, fn, in_place, args, kwargs, entry, on_grads(torch.abs))
    elif kind == "smooth":
        first_order([uniform])
    elif kind == "composite":
        composite()
    elif kind == "parts" and rounding[2] == "composite":
        composite()
    elif kind == "parts" and rounding[2] == "smooth":
        first_order([uniform])


def same_work_calls(details):
    """From a details CSV of the default standard: the calls with a row judged on an emulated
    device (device run and magnitudes), and those with a row judged again within the rounding
    bound, an `error` or one the bound passed (magnitudes)."""
    emulated, failed = set(), set()
    with open(details, encoding="utf-8-sig", newline="") as f:
        for row in csv.DictReader(f):
            m = re.match(r"^(.*?\.[0-9]+)\.(forward|backward)\.", row["API Name"])
            if m is None:
                continue
            if "tested: emulated device" in row["Message"]:
                emulated.add(m.group(1))
            # Judged again within the rounding bound: an error, or a row the bound passed.
            if row["Status"] == "error" or "within the rounding bound counted as exact" in row["Message"]:
                failed.add(m.group(1))
    return emulated, emulated | failed


def resident(field):
    """Bytes of /proc/self/status's FIELD (VmRSS: now; VmHWM: the high-water mark)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def reset_peak():
    """Restarts the high-water mark from the present resident size."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")


def call_api(name):
    """The API (`Prefix.op`) of a dump entry's name (`Prefix.op.N.forward`)."""
    return name[: -len(".forward")].rsplit(".", 1)[0]


def run_call(data, name, entry, files):
    """One call: its files read (or random tensors made), then the bench and the device, timed:
    (bench seconds, bench CPU seconds, device seconds, device CPU seconds)."""
    api = call_api(name)
    fn = callable_of(api)
    in_place = api.endswith("_") and not api.endswith("__")
    backward = None if in_place else data.get(name[: -len("forward")] + "backward")
    args = [decode(v, files) for v in entry.get("input_args", [])]
    kwargs = {n: decode(v, files) for n, v in entry.get("input_kwargs", {}).items()}
    decode(entry.get("output"), files)  # the recorded outputs the replay compares against
    grads = None
    if backward is not None:
        grads = decode(backward.get("input"), files)
        decode(backward.get("output"), files)  # the recorded gradients
    start, cpu0 = time.perf_counter(), time.process_time()
    side(lambda d: torch.float64, fn, in_place, args, kwargs, entry, grads)
    bench, cpu_bench = time.perf_counter() - start, time.process_time() - cpu0
    start, cpu0 = time.perf_counter(), time.process_time()
    side(lambda d: d, fn, in_place, args, kwargs, entry, grads)
    return bench, cpu_bench, time.perf_counter() - start, time.process_time() - cpu0


def same_work(data, folder, opts):
    """--same-work: the default standard's added work on the calls it adds it to, timed per class."""
    emulated, magnitudes = same_work_calls(opts.same_work)
    # Two passes, the first untimed: the main mode's figures are of a process whose first call
    # warmed torch's kernels up; here the first float32 product alone would cost 0.3 s more.
    for _ in range(2):
        classes, total, cpu_total = same_work_pass(data, folder, opts, emulated, magnitudes)
    print(f"  the default standard's added work (device runs of {len(emulated)} calls with emulated rows, magnitudes of "
          f"{len(magnitudes)} calls; the second of two passes): {total:.2f} s, CPU {cpu_total:.2f} s")
    print(json.dumps({"same_work": total, "cpu_same_work": cpu_total, "classes": classes}))
    return 0


def same_work_pass(data, folder, opts, emulated, magnitudes):
    """One pass of --same-work over the calls: (per class, seconds, CPU seconds)."""
    classes, total, cpu_total = {}, 0.0, 0.0
    for name, entry in data.items():
        call = name[: -len(".forward")]
        if not name.endswith(".forward") or call not in magnitudes:
            continue
        api = call.rsplit(".", 1)[0]
        fn = callable_of(api)
        in_place = api.endswith("_") and not api.endswith("__")
        backward = None if in_place else data.get(call + ".backward")
        files = Files(folder, opts.random)
        args = [decode(v, files) for v in entry.get("input_args", [])]
        kwargs = {n: decode(v, files) for n, v in entry.get("input_kwargs", {}).items()}
        grads = None if backward is None else decode(backward.get("input"), files)
        start, cpu0 = time.perf_counter(), time.process_time()
        if call in emulated and not opts.random:  # --random's main figures hold the device run already
            side(lambda d: d, fn, in_place, args, kwargs, entry, grads)
        magnitude_runs(api, fn, in_place, args, kwargs, entry, grads)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu0
        total, cpu_total = total + seconds, cpu_total + cpu
        c = classes.setdefault(op_class(api), {"calls": 0, "same_work": 0.0})
        c["calls"] += 1
        c["same_work"] += seconds
    return classes, total, cpu_total


def positive(text):
    """An argument that must be a whole number of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {value}")
    return value


def timed_pass(data, folder, opts):
    """One timed pass over the dump's calls: their totals, per class figures, wall and CPU seconds, and peak."""
    totals = {"read": 0.0, "bench": 0.0, "device": 0.0, "cpu_read": 0.0, "cpu_bench": 0.0, "cpu_device": 0.0}
    classes = {}
    calls, nbytes, peak = 0, 0, 0
    wall, cpu = time.perf_counter(), time.process_time()
    for name, entry in data.items():
        if not name.endswith(".forward") or name.startswith("Module."):
            continue
        api = call_api(name)
        reset_peak()
        files = Files(folder, opts.random)
        bench, cpu_bench, device, cpu_device = run_call(data, name, entry, files)
        call_peak = resident("VmHWM")
        peak = max(peak, call_peak)
        totals["read"] += files.seconds
        totals["bench"] += bench
        totals["device"] += device
        totals["cpu_read"] += files.cpu
        totals["cpu_bench"] += cpu_bench
        totals["cpu_device"] += cpu_device
        c = classes.setdefault(op_class(api), {"calls": 0, "read": 0.0, "bench": 0.0, "device": 0.0, "cpu": 0.0, "peak": 0})
        c["calls"] += 1
        c["peak"] = max(c["peak"], call_peak)
        c["read"] += files.seconds
        c["cpu"] += files.cpu + cpu_bench
        c["bench"] += bench
        c["device"] += device
        calls += 1
        nbytes += files.bytes
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"totals": totals, "classes": classes, "calls": calls, "bytes": nbytes, "wall": wall, "cpu": cpu, "peak": peak}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dump")
    ap.add_argument("--random", action="store_true", help="random data of the recorded shapes (a statistics dump), no files read")
    ap.add_argument("--print-classes", action="store_true", help="print each class of the dump's calls and its replay --filter regex, and exit")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--classes", action="store_true", help="also print the seconds of each op class")
    ap.add_argument("--passes", type=positive, default=1, help="time the calls this many times; each time is its median over the passes, the peaks the first pass's")
    ap.add_argument("--same-work", metavar="DETAILS_CSV", help="time only the work the default standard adds to read + bench (the module's text)")
    opts = ap.parse_args()
    torch.set_num_threads(opts.threads)
    with open(opts.dump, encoding="utf-8") as f:
        data = json.load(f)["data"]
    if opts.print_classes:
        apis = {n[: -len(".forward")].rsplit(".", 1)[0] for n in data if n.endswith(".forward") and not n.startswith("Module.")}
        for name, regex in class_filters(apis):
            print(f"{name}\t{regex}")
        return 0
    folder = os.path.join(os.path.dirname(os.path.abspath(opts.dump)), "dump_tensor_data")
    if opts.same_work:
        return same_work(data, folder, opts)
    baseline = resident("VmRSS")
    # Torch sets its kernels up on first use (the first float64 call of a process took 0.3-0.5 s
    # more than the next): each API's first call runs once untimed before the timed passes.
    warmed = set()
    for name, entry in data.items():
        if name.endswith(".forward") and not name.startswith("Module.") and call_api(name) not in warmed:
            warmed.add(call_api(name))
            run_call(data, name, entry, Files(folder, opts.random))
    passes = [timed_pass(data, folder, opts) for _ in range(opts.passes)]
    calls, nbytes, peak = passes[0]["calls"], passes[0]["bytes"], passes[0]["peak"]
    wall, cpu = median(p["wall"] for p in passes), median(p["cpu"] for p in passes)
    totals = {k: median(p["totals"][k] for p in passes) for k in passes[0]["totals"]}
    classes = {
        name: {k: v if k in ("calls", "peak") else median(p["classes"][name][k] for p in passes) for k, v in c.items()}
        for name, c in passes[0]["classes"].items()
    }
    gb = nbytes / 1e9
    print(f"torch {torch.__version__}, {opts.threads} threads: {calls} calls, {gb:.3f} GB of tensor files")
    print(f"  read (torch.load): {totals['read']:.2f} s, CPU {totals['cpu_read']:.2f} s ({gb / max(totals['read'], 1e-9):.2f} GB/s)")
    print(f"  bench (float64, forward+backward): {totals['bench']:.2f} s, CPU {totals['cpu_bench']:.2f} s")
    print(f"  device (dumped dtypes, forward+backward): {totals['device']:.2f} s, CPU {totals['cpu_device']:.2f} s")
    print(f"  read + bench: {totals['read'] + totals['bench']:.2f} s; all: {wall:.2f} s, CPU {cpu:.2f} s ({calls / wall:.1f} calls/s, {gb / wall:.2f} GB/s)")
    print(f"  peak resident memory {peak / 1e6:.0f} MB ({baseline / 1e6:.0f} MB of it held before the first call)")
    if opts.classes:
        for name, c in sorted(classes.items()):
            print(f"  {name}: {c['calls']} calls, read + bench {c['read'] + c['bench']:.2f} s (CPU {c['cpu']:.2f} s), device {c['device']:.2f} s, peak {c['peak'] / 1e6:.0f} MB")
    figures = {"calls": calls, "bytes": nbytes, "wall": wall, "cpu": cpu, **totals, "peak": peak, "baseline": baseline}
    print(json.dumps({**figures, "classes": classes}))


if __name__ == "__main__":
    sys.exit(main())
