"""Calls whose recorded input gradients msprobe lists in the layout of their last
autograd node, not in the call's input order: one forward + backward of F.linear (square and
non-square weights, with and without bias, 2-D and 3-D inputs), torch.matmul (2-D, folded,
broadcast batch), F.scaled_dot_product_attention (4-D and 3-D) and F.cross_entropy (plain and
label-smoothed), dumped by msprobe (task tensor, level L1).

    python layouts.py <msprobe config.json> <dump_path>

msprobe's PyTorch API hook registers its backward hook on the grad_fn of the call's first output
(`grad_fn.register_hook`), so a backward entry's `output` is that node's gradients w.r.t. its own
inputs: for a 2-D linear AddmmBackward0's `[bias, input, weight.t()]` (MmBackward0's
`[input, weight.t()]` without a bias), for a 3-D linear or a batched matmul the one gradient of
the view that reshapes the product (UnsafeViewBackward0), for a 2-D matmul MmBackward0's
`[input, other]`, for a 4-D attention the fused kernel's `[query, key, value]` and for a 3-D one
the squeeze back (SqueezeBackward1), for cross_entropy the inner log_softmax output's gradient
(NllLossBackward0) or, label-smoothed, the two terms' (AddBackward0). The names printed below are what torch builds for each call.
"""
import json
import os
import sys
import tempfile

import torch
import torch.nn.functional as F

from msprobe.pytorch import PrecisionDebugger, seed_all

SEED = 1234


def debugger_for(config_path, dump_path):
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)
    config["dump_path"] = os.path.abspath(dump_path)
    fd, tmp = tempfile.mkstemp(suffix=".json", prefix="msprobe_layouts_")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=4)
    seed_all(seed=SEED)
    torch.manual_seed(SEED)
    debugger = PrecisionDebugger(config_path=tmp)
    os.unlink(tmp)
    return debugger


def leaf(gen, *shape):
    return (torch.randn(*shape, generator=gen) * 0.5).requires_grad_(True)


def node(name, out):
    fn = out.grad_fn
    print(f"{name}: {type(fn).__name__} <- {[type(n).__name__ if n else None for n, _ in fn.next_functions]}")
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} <msprobe config.json> <dump_path>")
    debugger = debugger_for(sys.argv[1], sys.argv[2])
    g = torch.Generator().manual_seed(0)
    x2, x3, x4 = leaf(g, 3, 4), leaf(g, 2, 3, 4), leaf(g, 2, 2, 3, 4)
    w_sq, b_sq, w_ns, b_ns = leaf(g, 4, 4), leaf(g, 4), leaf(g, 5, 4), leaf(g, 5)
    w_sq2, w_ns2, m2, m3 = leaf(g, 4, 4), leaf(g, 3, 4), leaf(g, 4, 5), leaf(g, 2, 4, 5)
    target = torch.tensor([0, 2, 1])
    # The incoming gradients, one per output, drawn before the dump starts: torch.autograd.backward
    # takes them directly, so no loss-building calls enter the dump.
    shapes = [(3, 4), (3, 4), (3, 5), (3, 3), (2, 3, 5), (2, 3, 4), (3, 4), (2, 3, 5), (2, 2, 3, 5)]
    grads = [torch.randn(*s, generator=g) for s in shapes]
    # Drawn after the above, so that adding them changed none of the earlier values.
    q4, k4, v4, q3, k3, v3 = leaf(g, 1, 2, 4, 8), leaf(g, 1, 2, 4, 8), leaf(g, 1, 2, 4, 8), leaf(g, 2, 4, 8), leaf(g, 2, 4, 8), leaf(g, 2, 4, 8)
    smoothed_logits = leaf(g, 3, 4)
    grads += [torch.randn(1, 2, 4, 8, generator=g), torch.randn(2, 4, 8, generator=g)]
    debugger.start()
    outs = [
        node("linear 2-D square bias", F.linear(x2, w_sq, b_sq)),      # Functional.linear.0
        node("linear 2-D square", F.linear(x2, w_sq2)),                # Functional.linear.1
        node("linear 2-D bias", F.linear(x2, w_ns, b_ns)),             # Functional.linear.2
        node("linear 2-D", F.linear(x2, w_ns2)),                       # Functional.linear.3
        node("linear 3-D bias", F.linear(x3, w_ns, b_ns)),             # Functional.linear.4
        node("linear 3-D square", F.linear(x3, w_sq2)),                # Functional.linear.5
        node("matmul 2-D square", torch.matmul(x2, w_sq)),             # Torch.matmul.0
        node("matmul 3-D @ 2-D", torch.matmul(x3, m2)),                # Torch.matmul.1
        node("matmul 4-D @ 3-D", torch.matmul(x4, m3)),                # Torch.matmul.2
    ]
    outs += [
        node("sdpa 4-D", F.scaled_dot_product_attention(q4, k4, v4)),  # Functional.scaled_dot_product_attention.0
        node("sdpa 3-D", F.scaled_dot_product_attention(q3, k3, v3)),  # Functional.scaled_dot_product_attention.1
    ]
    logits = F.linear(x2, w_ns2)                                       # Functional.linear.6
    loss = node("cross_entropy", F.cross_entropy(logits, target))      # Functional.cross_entropy.0
    smoothed = node("cross_entropy smoothed", F.cross_entropy(smoothed_logits, target, label_smoothing=0.1))
    torch.autograd.backward(outs + [loss, smoothed], grads + [torch.tensor(1.0), torch.tensor(1.0)])
    debugger.stop()
    debugger.step()
    print("loss", float(loss.detach()))


if __name__ == "__main__":
    main()
