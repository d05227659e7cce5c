"""One dumped step of complex64 arithmetic, for tests/fixtures/complex_calls (make_forms.sh complex_calls):
`torch.polar` from a differentiated magnitude and phase, complex division, a complex matmul, `abs`
and `angle` of its result, `torch.complex` of two real tensors, a complex times a real tensor,
sums and differences, and `torch.view_as_real` back to a real loss. Seeded.

    PYTHONPATH=<msprobe> python complex_step.py <msprobe config.json> <dump_path>
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pytorch"))
import zoo_common  # noqa: E402


def main():
    debugger = zoo_common.setup()
    gen = zoo_common.generator()
    magnitude = (torch.rand(3, 4, generator=gen) + 0.5).requires_grad_()
    phase = (torch.rand(3, 4, generator=gen) * 6 - 3).requires_grad_()
    re = torch.randn(3, 4, generator=gen).requires_grad_()
    im = torch.randn(3, 4, generator=gen).requires_grad_()
    weight = torch.randn(4, 5, 2, generator=gen).requires_grad_()
    scale = torch.randn(3, 5, generator=gen).requires_grad_()
    debugger.start()
    p = torch.polar(magnitude, phase)
    c = torch.complex(re, im)
    q = c / p
    w = torch.view_as_complex(weight)
    m = torch.matmul(q, w)
    s = m * scale
    d = (s - m) + q.sum(dim=1, keepdim=True)
    loss = torch.abs(d).sum() + torch.angle(m).sum() + torch.view_as_real(d).sum()
    loss.backward()
    debugger.stop()
    debugger.step()


if __name__ == "__main__":
    main()
