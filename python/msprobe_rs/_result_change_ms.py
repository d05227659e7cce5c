"""ResultChange's MindSpore side (issue 39): the variants and the records for
a ``mindspore.nn.Cell`` trained in PyNative mode, where gradients come from
``mindspore.value_and_grad`` over ``net.trainable_params()`` (MindSpore
keeps no ``.grad`` on parameters, so ``record`` takes them).

    sync          launch blocking (``mindspore.runtime.launch_blocking()``,
                  else ``pynative_synchronize``), besides ASCEND_LAUNCH_BLOCKING=1
                  from the command; no per-op host read: MindSpore has no
                  function mode that sees every op without wrapping it
    module_hooks  a no-op ``register_forward_hook`` and ``register_backward_hook``
                  on every cell (msprobe's L0/mix)
    api_hooks     no-op wrappers of the mindspore.ops, Tensor, mint and
                  mint.nn.functional APIs msprobe 8.3.2's lists name (its L1)
"""

import functools
import hashlib
import sys

from ._hook_lists import MS_HOOK_LISTS
from ._step_record import param_entry


def is_cell(model):
    """Whether ``model`` is a MindSpore cell (MindSpore is not imported here)."""
    ms = sys.modules.get("mindspore")
    return ms is not None and isinstance(model, ms.nn.Cell)


def synchronize():
    """Every launch waits for its kernel from now on."""
    import mindspore as ms

    runtime = getattr(ms, "runtime", None)
    if runtime is not None and hasattr(runtime, "launch_blocking"):
        runtime.launch_blocking()
    else:
        ms.set_context(pynative_synchronize=True)


def install_cell_hooks(model):
    """No-op forward and backward hooks on every cell; their handles."""

    def forward_hook(cell, inputs, output):
        return None

    def backward_hook(cell, grad_input, grad_output):
        return None

    handles = []
    for _, cell in model.cells_and_names():
        handles.append(cell.register_forward_hook(forward_hook))
        handles.append(cell.register_backward_hook(backward_hook))
    return handles


def _owners():
    import mindspore as ms
    from mindspore import mint, ops

    return {"ops": ops, "tensor": ms.Tensor, "mint": mint, "mint.nn.functional": mint.nn.functional}


def install_api_hooks(missing):
    """No-op wrappers of msprobe's MindSpore hook-list APIs; the
    ``(owner, name, old)`` to restore (``missing`` where it had none of its own)."""
    owners = _owners()
    patched = []
    for key, names in MS_HOOK_LISTS.items():
        owner = owners[key]
        for name in names:
            original = getattr(owner, name, None)
            if original is None or not callable(original) or isinstance(original, type):
                continue
            patched.append((owner, name, owner.__dict__.get(name, missing)))
            setattr(owner, name, _noop_wrapper(original))
    return patched


def _noop_wrapper(original):
    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        return original(*args, **kwargs)

    return wrapper


def loss_value(loss):
    """The loss as a Python float (a MindSpore tensor read on the host)."""
    return float(loss.asnumpy()) if hasattr(loss, "asnumpy") else float(loss)


def params(model, grads):
    """The record's ``params`` and the sum of squares of every gradient:
    ``grads`` in the order of ``model.trainable_params()``, named by the
    parameters' names."""
    import numpy as np

    named = list(model.trainable_params())
    if grads is None or len(grads) != len(named):
        got = "none" if grads is None else len(grads)
        raise TypeError(
            f"ResultChange.record(loss, grads): a MindSpore cell needs the gradients of its {len(named)} trainable "
            f"parameters as mindspore.value_and_grad returns them, got {got}"
        )
    entries, squares = {}, 0.0
    for param, grad in zip(named, grads):
        g = grad.asnumpy()
        wide = g.astype(np.float64)
        stats = None if g.size == 0 else (wide.max(), wide.min(), wide.mean(), np.sqrt((wide**2).sum()))
        digest = hashlib.sha256(np.ascontiguousarray(g).tobytes()).hexdigest()
        entries[param.name] = param_entry(digest, str(grad.dtype), list(g.shape), stats)
        squares += float((wide**2).sum())
    return entries, squares
