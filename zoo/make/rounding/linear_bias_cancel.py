"""Case (c) of issue 21: torch's CPU bfloat16 `Functional.linear` with a bias that nearly cancels x.W^T.

The CPU kernel accumulates x.W^T in float32 and adds the bias before one rounding to bfloat16:
its result is not the correctly rounded x.W^T + b, and where the bias nearly cancels the product
the float32 accumulation error is several bfloat16 ULP of the (small) result (at 3 of the 2048
elements here, 0.146 %). x is 32 rows around one common row x0
and the bias is -(x0.W^T) rounded to bfloat16, so every element nearly cancels. Forward only
(nothing requires a gradient): the dump holds the one call.

    python linear_bias_cancel.py <msprobe config.json> <dump_path>
"""
import torch
import torch.nn.functional as F

import zoo_common

debugger = zoo_common.setup()

ROWS, IN, OUT = 32, 128, 64

g = zoo_common.generator(4)
x0 = torch.randn(1, IN, generator=g)
x = (x0 + 0.01 * torch.randn(ROWS, IN, generator=g)).to(torch.bfloat16)
w = (torch.randn(OUT, IN, generator=g) / IN ** 0.5).to(torch.bfloat16)
b = -(x0.double() @ w.double().t()).squeeze(0).to(torch.bfloat16)

debugger.start()
y = F.linear(x, w, b)
debugger.stop()
debugger.step()
print("max |y|", float(y.abs().max()), "max |x.W^T|", float((x.float() @ w.float().t()).abs().max()))
