"""One torch.matmul of two float32 2048x2048 matrices, forward and backward, for the real-size
benchmark (scripts/bench-real-size.sh): the issue's 2048x2048 matmul case as a tensor dump.

    python matmul_2048.py <msprobe config.json> <dump_path>

Run with the real msprobe on PYTHONPATH (zoo/make/make_gpt2_block.sh with MODEL=matmul_2048).
Seeded (zoo_common.SEED and a fixed generator): the same dump on every run.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pytorch"))
import zoo_common  # noqa: E402

N = 2048
debugger = zoo_common.setup()
g = zoo_common.generator()
a = torch.randn(N, N, generator=g).requires_grad_(True)
b = torch.randn(N, N, generator=g).requires_grad_(True)
grad = torch.randn(N, N, generator=g)
torch.matmul(a, b).backward(grad)  # warm-up, not dumped
debugger.start()
torch.matmul(a, b).backward(grad)
debugger.stop()
debugger.step()
print("loss", float((a.grad * a.grad).sum()))
