"""ResultChange: what one run of ``msprobe -f pytorch|mindspore result_change``
records (issues 23 and 39; the seed's document 36, "why did my loss change
when I turned the probe on?"). Two lines in the user's training script:

    rc = ResultChange(model)   # once the model exists
    rc.record(loss)            # after each backward
    rc.record(loss, grads)     # MindSpore: the gradients value_and_grad returned

A ``mindspore.nn.Cell`` gets MindSpore's variants (``_result_change_ms``);
anything else is a torch module.

The command runs the script once per variant, each in a fresh process, and
passes through the environment:

    MSPROBE_RC_DIR      the folder the records go to; without it nothing at all happens
    MSPROBE_RC_VARIANT  baseline | sync | module_hooks | api_hooks
    MSPROBE_RC_OPS=1    also the hash of every op's output, in call order

Variants, from the least to the most intrusive:

    baseline      nothing installed
    sync          a host read (``.item()`` of a sum) of every tensor an op returns,
                  as collecting statistics does
    module_hooks  a no-op ``register_forward_hook`` and ``register_full_backward_hook``
                  on every module of the model (msprobe's L0/mix)
    api_hooks     no-op wrappers of the torch.nn.functional, torch.Tensor and torch
                  APIs msprobe 8.3.2's support_wrap_ops.yaml lists, each with a no-op
                  hook on its output's grad_fn (its L1)

Each ``record`` writes ``MSPROBE_RC_DIR/step_<k>.json`` atomically (in a
process that knows its rank, from ``RANK``, msrun's ``RANK_ID`` or
``LOCAL_RANK``, ``MSPROBE_RC_DIR/rank_<r>/step_<k>.json``) and says so in one
line on stderr, which the command streams through: loss,
grad norm and, per parameter, the sha256 of the gradient's bytes and its
statistics (the keys are in RC.md of issue 23 and in the README). The files
are strict JSON: a float that is not finite (a NaN loss) is null, and its
``*_hex`` key (``float.hex``: "nan", "inf") keeps the exact value. With
MSPROBE_RC_OPS=1, ``"ops"`` lists ``[name, sha256 of the outputs]`` of every
torch call since the previous record (forward and optimizer; autograd's
backward runs below Python and is not seen), named as msprobe names them
(Functional.linear, Tensor.add_, Torch.tanh) without the call index.
"""

import functools
import hashlib
import json
import math
import os
import sys
import threading

from . import _files
from . import _result_change_ms as _ms
from ._hook_lists import HOOK_LISTS
from ._step_record import NO_GRADIENT, json_float, param_entry

VARIANTS = ("baseline", "sync", "module_hooks", "api_hooks")
RANK_VARIABLES = ("RANK", "RANK_ID", "LOCAL_RANK")


def process_rank():
    """This process's rank as a launcher sets it (torchrun: RANK, LOCAL_RANK;
    msrun: RANK_ID), the first of those set; None for a single process."""
    for key in RANK_VARIABLES:
        value = os.environ.get(key, "").strip()
        if value:
            if not value.isdigit():
                raise ValueError(f"ResultChange: {key} must be a rank number, got {value!r}")
            return int(value)
    return None


def _torch():
    import torch

    return torch


def tensor_bytes(t):
    """The raw bytes of a tensor, in C order, on the host (bfloat16 included)."""
    torch = _torch()
    t = t.detach()
    if t.layout != torch.strided:
        t = t.to_dense()
    return t.resolve_conj().resolve_neg().contiguous().reshape(-1).view(torch.uint8).cpu().numpy().tobytes()


def tensor_hash(t):
    """sha256 (hex) of a tensor's raw bytes: equal exactly when the bits are."""
    return hashlib.sha256(tensor_bytes(t)).hexdigest()


def _tensors_in(value):
    torch = _torch()
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors_in(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors_in(v)


def _api_name(func):
    """msprobe's prefix for a torch callable: Functional.x, Tensor.x or Torch.x."""
    name = getattr(func, "__name__", None) or type(func).__name__
    module = getattr(func, "__module__", None) or ""
    qual = getattr(func, "__qualname__", "") or ""
    if module.startswith(("torch.nn.functional", "torch._C._nn")):
        return f"Functional.{name}"
    if qual.startswith(("Tensor.", "TensorBase.", "_TensorBase.")) or getattr(func, "__objclass__", None) is not None:
        return f"Tensor.{name}"
    return f"Torch.{name}"


def _param_entry(grad):
    torch = _torch()
    if grad is None:
        return dict(NO_GRADIENT)
    g = grad.detach()
    x = g.double() if g.is_floating_point() or g.is_complex() else g.to(torch.float64)
    stats = None if g.numel() == 0 else (x.max(), x.min(), x.mean(), x.norm())
    return param_entry(tensor_hash(g), str(g.dtype), list(g.shape), stats)


class ResultChange:
    """Records one run of the user's training for ``result_change``, with the
    variant the environment names installed; outside the command (no
    MSPROBE_RC_DIR) it installs nothing and writes nothing."""

    def __init__(self, model):
        self.model = model
        self.folder = os.environ.get("MSPROBE_RC_DIR") or None
        self.variant = None
        self.mindspore = False
        self.rank = None
        self.step = 0
        self.ops = []
        self._record_ops = False
        self._handles = []
        self._patched = []
        self._modes = []
        self._paused = False
        if self.folder is None:
            return
        variant = os.environ.get("MSPROBE_RC_VARIANT", "baseline")
        if variant not in VARIANTS:
            raise ValueError(f"ResultChange: MSPROBE_RC_VARIANT must be one of {list(VARIANTS)}, got {variant!r}")
        self.variant = variant
        self.mindspore = _ms.is_cell(model)
        expected = os.environ.get("MSPROBE_RC_FRAMEWORK")
        if expected is not None and expected != ("mindspore" if self.mindspore else "pytorch"):
            got = "a mindspore.nn.Cell" if self.mindspore else f"a {type(model).__module__}.{type(model).__qualname__}"
            raise TypeError(f"ResultChange: the command was run with -f {expected}, but the model is {got}")
        self.rank = process_rank()
        if self.rank is not None:
            self.folder = os.path.join(self.folder, f"rank_{self.rank}")
            os.makedirs(self.folder, exist_ok=True)
        self._record_ops = os.environ.get("MSPROBE_RC_OPS") == "1"
        if self.mindspore:
            self._install_mindspore(variant)
            return
        if variant == "module_hooks":
            self._install_module_hooks()
        elif variant == "api_hooks":
            self._install_api_hooks()
        if variant == "sync" or self._record_ops:
            self._enter_mode(sync=variant == "sync", record=self._record_ops)

    @property
    def enabled(self):
        """Whether this process runs under the command (MSPROBE_RC_DIR set)."""
        return self.folder is not None

    # --- the variants -------------------------------------------------------

    def _install_module_hooks(self):
        def forward_hook(module, args, output):
            return None

        def backward_hook(module, grad_input, grad_output):
            return None

        for _, module in self.model.named_modules():
            self._handles.append(module.register_forward_hook(forward_hook))
            self._handles.append(module.register_full_backward_hook(backward_hook))

    def _install_api_hooks(self):
        torch = _torch()
        import torch.nn.functional as functional

        owners = {"functional": functional, "tensor": torch.Tensor, "torch": torch}
        for key, names in HOOK_LISTS.items():
            for name in names:
                owner = owners[key]
                if key == "torch" and name.startswith("linalg."):
                    owner, name = torch.linalg, name[len("linalg."):]
                original = getattr(owner, name, None)
                if original is None or not callable(original):
                    continue
                self._patched.append((owner, name, owner.__dict__.get(name, _MISSING)))
                setattr(owner, name, _noop_wrapper(original))

    def _install_mindspore(self, variant):
        # Op hashes (--ops) need torch's function mode: MindSpore's records have none.
        self._record_ops = False
        if variant == "sync":
            _ms.synchronize()
        elif variant == "module_hooks":
            self._handles = _ms.install_cell_hooks(self.model)
        elif variant == "api_hooks":
            self._patched = _ms.install_api_hooks(_MISSING)

    def _enter_mode(self, sync, record):
        mode = _make_mode(self, sync, record)
        mode.__enter__()
        self._modes.append(mode)

    def remove(self):
        """Takes every hook, wrapper and mode this object installed away again."""
        for mode in reversed(self._modes):
            mode.__exit__(None, None, None)
        self._modes = []
        for handle in self._handles:
            handle.remove()
        self._handles = []
        for owner, name, old in reversed(self._patched):
            if old is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        self._patched = []

    # --- recording ----------------------------------------------------------

    def record(self, loss, grads=None):
        """Writes this step's record (call after backward; for a MindSpore cell,
        with the gradients of its trainable parameters); nothing outside the command."""
        if self.folder is None:
            return
        self._paused = True
        try:
            self._write_step(loss, grads)
        finally:
            self._paused = False
        self.step += 1

    def _torch_step(self, loss):
        torch = _torch()
        loss_value = float(loss.detach().double().item()) if isinstance(loss, torch.Tensor) else float(loss)
        params = {}
        squares = 0.0
        for name, param in self.model.named_parameters():
            params[name] = _param_entry(param.grad)
            if param.grad is not None:
                squares += float(param.grad.detach().double().pow(2).sum())
        return loss_value, params, squares

    def _write_step(self, loss, grads):
        if self.mindspore:
            loss_value = _ms.loss_value(loss)
            params, squares = _ms.params(self.model, grads)
        else:
            loss_value, params, squares = self._torch_step(loss)
        grad_norm = math.sqrt(squares)
        data = {"step": self.step, "variant": self.variant, "loss": json_float(loss_value), "loss_hex": float.hex(loss_value),
                "grad_norm": json_float(grad_norm), "grad_norm_hex": float.hex(grad_norm), "params": params}
        if self._record_ops:
            data["ops"] = self.ops
            self.ops = []
        path = os.path.join(self.folder, f"step_{self.step}.json")
        text = json.dumps(data, indent=1, allow_nan=False)
        _files.write_atomic(path, lambda f: f.write(text.encode("utf-8")))
        where = "" if self.rank is None else f" on rank {self.rank}"
        # One write of the whole line: print() writes the text and its newline apart, so ranks
        # sharing one pipe (torchrun's workers) would split each other's lines.
        sys.stderr.write(f"msprobe_rs.ResultChange: step {self.step} recorded{where} (loss {loss_value!r})\n")
        sys.stderr.flush()


_MISSING = object()
_WRAPPER_DEPTH = threading.local()
_NOT_OPS = ("__get__", "__set__")
_HOOKS_FILE = os.path.join("torch", "utils", "hooks.py")


def _noop_grad_fn_hook(grad_inputs, grad_outputs):
    return None


def _noop_wrapper(original):
    """A wrapper that calls the original and, as msprobe 8.3.2's L1 does
    (PytorchHookManager._register_backward_pre_hook), registers a no-op hook on
    the grad_fn of the first tensor output when it requires a gradient."""
    torch = _torch()

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        depth = getattr(_WRAPPER_DEPTH, "value", 0)
        _WRAPPER_DEPTH.value = depth + 1
        try:
            out = original(*args, **kwargs)
        finally:
            _WRAPPER_DEPTH.value = depth
        if depth > 0:
            return out  # an API called by a wrapped API: msprobe's L1 hooks only the outermost
        first = next(_tensors_in(out), None)
        if first is not None and first.requires_grad and torch.is_grad_enabled() and first.grad_fn is not None:
            first.grad_fn.register_hook(_noop_grad_fn_hook)
        return out

    return wrapper


def _make_mode(rc, sync, record):
    """A TorchFunctionMode that, after every torch call, reads a statistic of
    each tensor output on the host (``sync``) and/or hashes the outputs into
    ``rc.ops`` (``record``)."""
    torch = _torch()
    from torch.overrides import TorchFunctionMode

    class _ResultChangeMode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            # record()'s own reads, and attribute reads (t.grad, t.shape: descriptors' __get__), are no ops.
            if rc._paused or getattr(func, "__name__", None) in _NOT_OPS:
                return out
            # The module hooks' own plumbing (torch.utils.hooks.BackwardHook: view_as on each
            # input and output) is not the user's op: recording it would shift the op lists.
            if sys._getframe(1).f_code.co_filename.endswith(_HOOKS_FILE):
                return out
            tensors = [t for t in _tensors_in(out) if t.layout == torch.strided and t.device.type != "meta"]
            if sync:
                for t in tensors:
                    if t.numel() > 0:
                        t.detach().sum().item()
            if record and tensors:
                h = hashlib.sha256()
                for t in tensors:
                    h.update(tensor_bytes(t))
                rc.ops.append([_api_name(func), h.hexdigest()])
            return out

    return _ResultChangeMode()


