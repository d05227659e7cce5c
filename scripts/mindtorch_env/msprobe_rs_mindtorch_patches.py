"""Run-time patches that make mindtorch 0.4.0 import and run on mindspore-dev 2.6.0.dev20250323 (CPU).

Why: that pair is the one MSAdapter combination that imports and computes on this kind of machine
(../shared/reference/mindtorch.md), but four things fail on it. They are fixed here, when the
affected module has just been executed, by an import hook installed from the test environment's
``msprobe_rs_mindtorch_patches.pth`` (scripts/setup-python-env.sh --mindtorch places both into
site-packages). No installed file is edited, and generated scripts carry none of this.

1. ``mindspore._c_expression.Tensor`` is gone (renamed ``TensorPy``): alias it.
2. ``get_registed_fn`` of mindtorch's ``_register.register_utils`` raises ``ValueError`` for
   graph-mode overloads MindSpore no longer has (``pow_`` for ``(Tuple, Tensor)``): return a
   function that raises ``TypeError`` when called, so that import finishes.
3. msprobe's MSAdapter adaptor imports module-level hook dicts from ``torch.nn.modules.module``
   that mindtorch 0.4.0 lacks, and its PrecisionDebugger takes
   ``Module.register_full_backward_pre_hook``: add the missing dicts, empty, and that method,
   which records the hook as torch does (mindtorch 0.4.0's backward, through MindSpore's grad,
   never calls module backward-pre hooks; msprobe's L1 dumps do not need them).
4. ``use_deterministic_algorithms`` raises on the CPU (no deterministic setting there): make it
   a no-op when MindSpore's device target is the CPU.

mindtorch's modules are patched under both names they load as: ``mindtorch.torch.X`` (the
package) and ``torch.X`` when MSAdapter's ``torch`` folder is on ``PYTHONPATH``; a ``torch.X``
module outside mindtorch's folder (the real torch) is left alone.
"""

import collections
import importlib.abc
import os
import sys

_MINDTORCH_TAIL = os.sep + "mindtorch" + os.sep + "torch" + os.sep


def _alias_tensor(module):
    if not hasattr(module, "Tensor") and hasattr(module, "TensorPy"):
        module.Tensor = module.TensorPy


def _tolerate_missing_overloads(module):
    found = module.get_registed_fn

    def get_registed_fn(ops, *type_names):
        try:
            return found(ops, *type_names)
        except ValueError as missing:
            reason = str(missing)

            def unavailable(*args, **kwargs):
                raise TypeError(f"not available on this MindSpore: {reason}")

            return unavailable

    module.get_registed_fn = get_registed_fn


def _add_hook_dicts(module):
    for name in ("_global_backward_pre_hooks", "_global_backward_hooks", "_global_forward_pre_hooks",
                 "_global_forward_hooks", "_global_forward_hooks_always_called"):
        if not hasattr(module, name):
            setattr(module, name, collections.OrderedDict())
    if not hasattr(module, "_global_is_full_backward_hook"):
        module._global_is_full_backward_hook = None
    if not hasattr(module.Module, "register_full_backward_pre_hook"):
        module.Module.register_full_backward_pre_hook = _register_full_backward_pre_hook


def _register_full_backward_pre_hook(self, hook):
    from mindtorch.torch.utils.hooks import RemovableHandle

    hooks = self.__dict__.setdefault("_backward_pre_hooks", collections.OrderedDict())
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def _deterministic_on_cpu(module):
    found = module.use_deterministic_algorithms

    def use_deterministic_algorithms(mode, *, warn_only=False):
        import mindspore

        if mindspore.get_context("device_target") == "CPU":
            return None
        return found(mode, warn_only=warn_only)

    module.use_deterministic_algorithms = use_deterministic_algorithms


# module name below mindtorch's torch package (or MindSpore's own name) -> its patch
_MINDTORCH_PATCHES = {
    "_register.register_utils": _tolerate_missing_overloads,
    "nn.modules.module": _add_hook_dicts,
    "functional": _deterministic_on_cpu,
}
_MINDSPORE_PATCHES = {"mindspore._c_expression": _alias_tensor}


def _patch_for(fullname, origin):
    if fullname in _MINDSPORE_PATCHES:
        return _MINDSPORE_PATCHES[fullname]
    for head in ("mindtorch.torch.", "torch."):
        if fullname.startswith(head) and fullname[len(head):] in _MINDTORCH_PATCHES:
            if origin and _MINDTORCH_TAIL in origin:
                return _MINDTORCH_PATCHES[fullname[len(head):]]
    return None


class _PatchingLoader(importlib.abc.Loader):
    """Runs the real loader, then the module's patch."""

    def __init__(self, loader, patch):
        self._loader = loader
        self._patch = patch

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._patch(module)


class _PatchingFinder(importlib.abc.MetaPathFinder):
    """Finds a patched module through the rest of sys.meta_path and wraps its loader."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in _MINDSPORE_PATCHES and not fullname.endswith(
                tuple(_MINDTORCH_PATCHES)):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is None:
                continue
            patch = _patch_for(fullname, spec.origin)
            if patch is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader, patch)
            return spec
        return None


if not any(isinstance(finder, _PatchingFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _PatchingFinder())
