#!/usr/bin/env python3
"""msprobe's metric formulas in NumPy, on the same data as `cargo bench -p
runtime --bench compare`, for the side-by-side ratio (scripts/bench-runtime.sh).

The formulas are those of msprobe 8.3.2's generated MindSpore script: both
arrays as float64, cosine = dot / (norm * norm), max |b - t|, and
max |b - t| / (|b| + (b == 0) * 1e-8).
"""

import os
import time

import numpy as np

n = int(os.environ.get("N", "50000000"))
i = np.arange(n, dtype=np.float32)
bench = np.sin(i * np.float32(0.618034), dtype=np.float32)
tested = bench + np.float32(1e-4) * ((np.arange(n) % 7).astype(np.float32) - 3)
for round_ in range(3):
    start = time.perf_counter()
    b, t = bench.astype(np.float64), tested.astype(np.float64)
    cosine = np.dot(b, t) / (np.linalg.norm(b) * np.linalg.norm(t))
    diff = np.abs(b - t)
    max_abs = np.max(diff)
    max_rel = np.max(diff / (np.abs(b) + (b == 0) * 1e-8))
    secs = time.perf_counter() - start
    gbs = 2 * n * 4 / secs / 1e9
    print(f"numpy round {round_}: {n} elements in {secs:.3f} s ({gbs:.2f} GB/s), cosine {cosine:.9f}, max_abs {max_abs:.3e}")
