"""One training step of a transformer block and a convolutional block at sizes where a call's
input is 10^5 to 10^6 elements, dumped by the real msprobe (task tensor, level L1, forward and
backward) for `replay --minimize` (tests/minimize.rs): the planted copies of this dump
(plant.py) are where "1% of the input elements" is a size a repro can reach.

    PYTHONPATH=<msprobe 26.2.0> python step.py <msprobe config.json> <dump_path>

The transformer block: x [4, 128, 256] (batch, sequence, hidden), pre-norm `F.layer_norm`, one
qkv `F.linear`, 4 heads of 64, `torch.matmul(q, k^T)` times 1/8, `F.softmax`, `torch.matmul` with
v, the output `F.linear`, the residual `__add__`, `F.layer_norm`, the MLP `F.linear` (1024),
`F.gelu`, `F.linear`, the residual add. The convolutional block: an image batch [8, 64, 32, 32],
`F.conv2d` 3x3 to 128 channels, `F.batch_norm` (training), `F.relu`, a 1x1 `F.conv2d`, the
residual `__add__` of the two convolutions, `torch.sigmoid`, `__mul__`, and a 3x3 `F.conv2d` of
stride 2 without padding to 16 channels. The loss is the sum of the blocks' means. float32, seeded: the same dump on every run.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "zoo", "make", "pytorch"))
import zoo_common  # noqa: E402

B, S, D, HEADS = 4, 128, 256, 4
N, C, HW = 8, 64, 32


def param(gen, *shape, std=0.05):
    return (torch.randn(*shape, generator=gen) * std).requires_grad_()


def main():
    debugger = zoo_common.setup()
    gen = zoo_common.generator()
    ln1_w, ln1_b = (1 + param(gen, D, std=0.1)).detach().requires_grad_(), param(gen, D)
    qkv_w, qkv_b = param(gen, 3 * D, D), param(gen, 3 * D)
    out_w, out_b = param(gen, D, D), param(gen, D)
    ln2_w, ln2_b = (1 + param(gen, D, std=0.1)).detach().requires_grad_(), param(gen, D)
    fc1_w, fc1_b = param(gen, 4 * D, D), param(gen, 4 * D)
    fc2_w, fc2_b = param(gen, D, 4 * D), param(gen, D)
    conv1_w, conv1_b = param(gen, 2 * C, C, 3, 3, std=0.1), param(gen, 2 * C)
    bn_w, bn_b = (1 + param(gen, 2 * C, std=0.1)).detach().requires_grad_(), param(gen, 2 * C)
    conv2_w = param(gen, 2 * C, 2 * C, 1, 1, std=0.1)
    conv3_w = param(gen, C // 4, 2 * C, 3, 3, std=0.05)
    x = torch.randn(B, S, D, generator=gen).requires_grad_()
    img = torch.randn(N, C, HW, HW, generator=gen).requires_grad_()
    running_mean, running_var = torch.zeros(2 * C), torch.ones(2 * C)

    debugger.start()
    h = F.layer_norm(x, (D,), ln1_w, ln1_b)
    q, k, v = F.linear(h, qkv_w, qkv_b).split(D, dim=-1)
    heads = lambda t: t.reshape(B, S, HEADS, D // HEADS).transpose(1, 2)  # noqa: E731
    q, k, v = heads(q), heads(k), heads(v)
    scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / (D // HEADS) ** 0.5)
    attn = torch.matmul(F.softmax(scores, dim=-1), v).transpose(1, 2).reshape(B, S, D)
    x1 = x + F.linear(attn, out_w, out_b)
    mlp = F.linear(F.gelu(F.linear(F.layer_norm(x1, (D,), ln2_w, ln2_b), fc1_w, fc1_b)), fc2_w, fc2_b)
    y = x1 + mlp
    c1 = F.conv2d(img, conv1_w, conv1_b, padding=1)
    a = F.relu(F.batch_norm(c1, running_mean, running_var, bn_w, bn_b, training=True))
    c2 = F.conv2d(a, conv2_w) + c1
    z = c2 * torch.sigmoid(c2)
    d = F.conv2d(z, conv3_w, stride=2)
    loss = y.mean() + z.mean() + d.mean()
    loss.backward()
    debugger.stop()
    debugger.step()
    print("loss", float(loss))


if __name__ == "__main__":
    main()
