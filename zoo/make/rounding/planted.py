"""Item 3 of issue 21: the calls whose recorded outputs plant.py replaces by a wrong kernel's result.

Six forward calls, dumped by the real msprobe with the correct CPU kernels (nothing requires a
gradient, so the dump holds forward entries only):
- `Torch.sum` of 4096 positive float16 values (the correct kernel accumulates in float32);
- `Torch.matmul` of float32 [16, 64] x [64, 16];
- `Torch.mul` of same-sign float32 values (a well-conditioned product);
- `Functional.gelu` (erf form) of float32 values on [-4, 4];
- `Torch.sum(x, dim=1)` of float32 [8, 32];
- `Torch.add` of float32 [64] tensors.

    python planted.py <msprobe config.json> <dump_path>
"""
import torch
import torch.nn.functional as F

import zoo_common

debugger = zoo_common.setup()

g = zoo_common.generator(5)
halves = (torch.rand(4096, generator=g) * 0.5 + 0.01).to(torch.float16)
a, b = torch.randn(16, 64, generator=g), torch.randn(64, 16, generator=g)
p, q = torch.rand(64, generator=g) + 0.5, torch.rand(64, generator=g) + 0.5
x = torch.linspace(-4.0, 4.0, 128)
rows = torch.randn(8, 32, generator=g)
u, v = torch.randn(64, generator=g), torch.randn(64, generator=g)

debugger.start()
torch.sum(halves)
torch.matmul(a, b)
torch.mul(p, q)
F.gelu(x)
torch.sum(rows, dim=1)
torch.add(u, v)
debugger.stop()
debugger.step()
print("dumped the six calls")
