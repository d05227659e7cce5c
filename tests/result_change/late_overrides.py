"""Document 36's hook cause at API level, on the CPU: no-op API wrappers
(msprobe's L1) change a result when code finds torch's functions by
identity. A tensor subclass routes `F.linear` to a kernel of its own
through `__torch_function__`, with a table keyed by torch's function
objects (the pattern of torch's "Extending torch" documentation, used by
libraries such as torchao), filled when the library is first used: after
the tool is on. The wrapper then is the table's key, while
`__torch_function__` receives the original function, so the library's
kernel (float64, rounded once) is not found and torch's float32 one runs:
the gradients change."""

import sys

import torch
import torch.nn.functional as F

from nofanout import chain, seeded, train

HANDLED = {}


class Activations(torch.Tensor):
    """Activations whose linear layers run the library's kernel."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in HANDLED:
            return HANDLED[func](*args, **kwargs)
        return super().__torch_function__(func, types, args, kwargs)


def load_kernels():
    """The library's registration, run on first use."""

    def linear(x, weight, bias=None):
        with torch._C.DisableTorchFunctionSubclass():
            wide = F.linear(x.double(), weight.double(), None if bias is None else bias.double())
            return wide.float().as_subclass(Activations)

    HANDLED[F.linear] = linear


def main(steps):
    seeded()

    def inputs():
        if not HANDLED:
            load_kernels()  # the library's first use: after ResultChange, as after the tool's start
        return torch.randn(3, 32).as_subclass(Activations)

    train(chain(), steps, inputs=inputs)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
