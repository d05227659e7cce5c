"""Case (a) of issue 21: an SGD step with weight decay whose `d_p.add(p, alpha=wd)` nearly cancels.

SGD(foreach=False) adds the weight decay term with `grad.add(param, alpha=weight_decay)`
(`Tensor.add` with `alpha` in the dump). The loss carries a constant term `(W * C).sum()` whose
gradient C is chosen, before the dumped step, so that for half of the weight's elements the total
gradient is -wd * W * (1 + e) with |e| about 1e-3: there the add cancels to three digits, and the
float32 result (alpha*p rounded, then the sum rounded, as the kernel should) has a relative error
of about 1e-4 against the exact sum.

    python sgd_weight_decay.py <msprobe config.json> <dump_path>
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import zoo_common

debugger = zoo_common.setup()

IN, OUT, BATCH, LR, WD = 8, 6, 4, 0.1, 0.05

model = nn.Linear(IN, OUT)
optimizer = torch.optim.SGD(model.parameters(), lr=LR, weight_decay=WD, foreach=False)
g = zoo_common.generator(1)
x = torch.randn(BATCH, IN, generator=g)
y = torch.randn(BATCH, OUT, generator=g)
C = torch.zeros(OUT, IN)


def loss_fn():
    return F.mse_loss(model(x), y) + (model.weight * C).sum()


def step():
    loss = loss_fn()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


warm = step()
# The gradient of the mse part at the weights of the dumped step (undumped), then C.
F.mse_loss(model(x), y).backward()
g_mse = model.weight.grad.detach().clone()
optimizer.zero_grad()
with torch.no_grad():
    w = model.weight.detach()
    eps = (torch.rand(OUT, IN, generator=g) + 0.5) * 1e-3 * torch.where(torch.rand(OUT, IN, generator=g) < 0.5, -1.0, 1.0)
    cancel = torch.arange(OUT * IN).reshape(OUT, IN) % 2 == 0
    C.copy_(torch.where(cancel, -WD * w * (1 + eps) - g_mse, torch.zeros_like(w)))

debugger.start()
loss = step()
debugger.stop()
debugger.step()
print("warm-up loss", float(warm.detach()), "dumped step loss", float(loss.detach()))
