"""MSAdapter's torch and the real torch in one process, the way msprobe 8.3.2's op_generate does it.

Why: a generated script for a mindtorch dump runs the tested side on MSAdapter's torch API and the
bench on the real torch, in one process, although both are imported as ``torch``. msprobe 8.3.2's
``operator_replication.template`` (and ``api_accuracy_checker/torch_mindtorch_importer.py``) does:

1. ``import torch as mindtorch``: with MSAdapter enabled through ``PYTHONPATH`` (its folder that
   holds MSAdapter's ``torch/`` package, doc 33 §2 prerequisite 4) this is MSAdapter's torch;
2. if ``torch.tensor(0.0)`` is a ``mindspore.Tensor`` (MSAdapter mode), remove the folder above
   the imported ``torch`` package from ``sys.path``, delete every ``torch`` / ``torch.*`` entry of
   ``sys.modules``, and check again (up to 20 rounds, one per shadowing folder);
3. ``import torch`` again: now the real torch; then put ``sys.path`` back as it was.

The module objects bound in step 1 (``mindtorch``, ``mindtorch.nn.functional``) keep working: MSAdapter's
code imports itself as ``mindtorch.torch.*``, whose ``sys.modules`` entries step 2 does not delete.
When MSAdapter is installed as the ``mindtorch`` package and not on ``PYTHONPATH``,
``import mindtorch.torch`` and ``import torch`` need no trick at all; this demo does either.
(mindtorch 0.4.0 also has a switch of its own: after ``from mindtorch.tools import mstorch_enable``
``import torch`` is ``mindtorch.torch``, and after ``mindtorch.torch_enable()`` the real torch.)

With mindtorch 0.4.0 on ``PYTHONPATH``, ``import torch.nn.functional`` loads a second copy of
MSAdapter's ``torch.nn`` package under ``torch.nn.*`` (its functions work; its classes, e.g.
``Parameter``, are not ``mindtorch.torch``'s). The demo uses the attributes of the ``torch``
module (``mt.nn.functional``), which are ``mindtorch.torch``'s.

    PYTHONPATH=<site-packages>/mindtorch python two_torches_demo.py     # doc 33's setting
    python two_torches_demo.py                                          # mindtorch.torch

in the MSAdapter test environment (scripts/setup-mindtorch-env.sh). Prints the results and
exits 0 when both torches computed the same softmax and the same matmul gradients.
"""

import os
import sys

import mindspore
import numpy as np

MAX_ROUNDS = 20  # msprobe's MsCompareConst.MAX_RECURSION_DEPTH


def _is_msadapter(module):
    return isinstance(module.tensor(0.0), mindspore.Tensor)


def _drop_torch_modules():
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
        del sys.modules[name]


def import_two_torches():
    """(MSAdapter's torch, the real torch), whichever way MSAdapter is installed."""
    import torch as first

    if not _is_msadapter(first):
        import mindtorch.torch as msadapter

        return msadapter, first
    msadapter, saved_path = first, list(sys.path)
    for _ in range(MAX_ROUNDS):
        import torch as shadowing

        if not _is_msadapter(shadowing):
            break
        folder = os.path.dirname(os.path.dirname(os.path.realpath(shadowing.__file__)))
        sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != folder]
        _drop_torch_modules()
    else:
        raise SystemExit(f"MSAdapter's torch still shadows the real torch after {MAX_ROUNDS} rounds")
    import torch as real

    sys.path[:] = saved_path
    if _is_msadapter(real):
        raise SystemExit("no real torch besides MSAdapter's")
    return msadapter, real


def main():
    mt, torch = import_two_torches()
    x = np.array([[0.5, -1.0, 2.0], [3.0, 0.0, -0.5]], dtype=np.float32)
    w = np.array([[1.0, 2.0], [-1.0, 0.5], [0.25, -2.0]], dtype=np.float32)

    tested = mt.nn.functional.softmax(mt.from_numpy(x), dim=-1)
    bench = torch.nn.functional.softmax(torch.from_numpy(x).double(), dim=-1)
    print("MSAdapter:", type(tested).__module__, type(tested).__name__, tested.dtype, mt.__file__)
    print("real torch:", torch.__version__, torch.__file__)

    def loss(a, b):
        return mt.matmul(a, b).sum()

    _, (grad_x, grad_w) = mindspore.value_and_grad(loss, grad_position=(0, 1))(
        mt.from_numpy(x), mt.from_numpy(w))
    bx = torch.from_numpy(x).double().requires_grad_()
    bw = torch.from_numpy(w).double().requires_grad_()
    torch.matmul(bx, bw).sum().backward()

    ok = (np.allclose(tested.asnumpy(), bench.numpy(), atol=1e-6)
          and np.allclose(grad_x.asnumpy(), bx.grad.numpy(), atol=1e-6)
          and np.allclose(grad_w.asnumpy(), bw.grad.numpy(), atol=1e-6))
    print("softmax and matmul gradients agree:", ok)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
