"""Case (b) of issue 21: a small residual MLP under torch.autocast("cpu", dtype=torch.bfloat16).

The linears run in bfloat16 (autocast casts their float32 inputs, weights and biases), the
residual adds `h + block(h)` add two bfloat16 tensors, some of whose elements nearly cancel; the
loss is taken in float32. One SGD step with momentum and weight decay (foreach=False:
`grad.add(param, alpha=weight_decay)`, where the decay is as large as the gradient at some
elements, which then nearly cancel) after one undumped warm-up step. The linears are not square (8 -> 12 -> 16 -> 12 -> 4), so no recorded
weight gradient has the shape of its transpose.

    python autocast_residual.py <msprobe config.json> <dump_path>
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import zoo_common

debugger = zoo_common.setup()

IN, HID, WIDE, OUT, BATCH, WD = 8, 12, 16, 4, 8, 0.1


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(IN, HID)
        self.up = nn.Linear(HID, WIDE)
        self.down = nn.Linear(WIDE, HID)
        self.head = nn.Linear(HID, OUT)

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = self.inp(x)
            h = h + self.down(F.relu(self.up(h)))
            h = h + self.down(torch.tanh(self.up(h)))
            return self.head(h)


model = Residual()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=WD, foreach=False)
g = zoo_common.generator(2)
x = torch.randn(BATCH, IN, generator=g)
y = torch.randn(BATCH, OUT, generator=g)


def loss_fn():
    return F.mse_loss(model(x).float(), y)


zoo_common.train_step(debugger, model, optimizer, loss_fn)
