"""MindSpore itself as the reference of a name MindSpore spells as torch does
(runtime/src/ops/derive.rs, MS_TORCH_SPELLINGS: `mindspore.ops.X` dumped as
`Functional.X`, `mindspore.Tensor.X` as `Tensor.X`).

`ms_reference(name)` is a torch callable for reference.py: its torch tensors
go to MindSpore unchanged in value and dtype (float64 stays float64), the call
runs in MindSpore (PyNative), and its results come back as torch tensors. Its
backward is MindSpore's own: `mindspore.grad` of the sum of each output times
its output gradient, with respect to the differentiated tensors. So what
MindSpore computes, forward and backward, is what the runtime is held to.
"""

import mindspore as ms
import torch


def _to_ms(value):
    if isinstance(value, torch.Tensor):
        return ms.Tensor(value.detach().contiguous().numpy())
    if isinstance(value, (list, tuple)):
        return type(value)(_to_ms(v) for v in value)
    if isinstance(value, torch.dtype):
        return getattr(ms, str(value).removeprefix("torch."))
    return value


def _flat(result):
    if isinstance(result, (list, tuple)):
        return [x for r in result for x in _flat(r)]
    return [result]


def _to_torch(value):
    if isinstance(value, ms.Tensor):
        return torch.from_numpy(value.asnumpy().copy())
    return value


def _callable(name):
    prefix, op = name.split(".")
    if prefix == "Functional":
        return getattr(ms.ops, op)
    if prefix == "Tensor":
        getattr(ms.Tensor, op)  # AttributeError when MindSpore's Tensor has no such method
        return lambda x, *args, **kwargs: getattr(x, op)(*args, **kwargs)
    raise AttributeError(name)


def ms_reference(name):
    """The torch-callable MindSpore reference of `name` (AttributeError when
    MindSpore has no such function)."""
    fn = _callable(name)

    def call(*args, **kwargs):
        slots = list(args) + list(kwargs.values())
        keys = list(kwargs)
        leaves = [i for i, v in enumerate(slots) if isinstance(v, torch.Tensor) and v.requires_grad]

        def run(values):
            ms_args = [_to_ms(v) for v in values[: len(args)]]
            ms_kwargs = {k: _to_ms(v) for k, v in zip(keys, values[len(args):])}
            return _flat(fn(*ms_args, **ms_kwargs))

        if not leaves:
            outs = [_to_torch(o) for o in run(slots)]
            return outs[0] if len(outs) == 1 else tuple(outs)

        class Bridge(torch.autograd.Function):
            @staticmethod
            def forward(ctx, *tensors):
                values = list(slots)
                for i, t in zip(leaves, tensors):
                    values[i] = t.detach()
                ctx.values = values
                return tuple(_to_torch(o) for o in run(values))

            @staticmethod
            def backward(ctx, *grad_outputs):
                gouts = [None if g is None else ms.Tensor(g.contiguous().numpy()) for g in grad_outputs]

                def loss(*ms_leaves):
                    values = list(ctx.values)
                    for i, t in zip(leaves, ms_leaves):
                        values[i] = t
                    outs = _flat(fn(*values[: len(args)], **dict(zip(keys, values[len(args):]))))
                    terms = [(o * g).sum() for o, g in zip(outs, gouts) if g is not None and o.dtype in (ms.float64, ms.float32)]
                    return sum(terms[1:], terms[0])

                ms_leaves = [_to_ms(ctx.values[i]) for i in leaves]
                # The other arguments are MindSpore values too.
                ctx.values = [v if i in leaves else _to_ms(v) for i, v in enumerate(ctx.values)]
                grads = ms.grad(loss, grad_position=tuple(range(len(ms_leaves))))(*ms_leaves)
                if len(ms_leaves) == 1:
                    grads = (grads,)
                return tuple(_to_torch(g) for g in grads)

        outs = Bridge.apply(*[slots[i] for i in leaves])
        return outs[0] if len(outs) == 1 else outs

    return call


def _parameters(name):
    """The positional-or-keyword parameter names of MindSpore's function
    `name`, or None (Tensor methods are builtins without a signature)."""
    import inspect

    prefix, op = name.split(".")
    if prefix != "Functional":
        return None
    try:
        params = inspect.signature(getattr(ms.ops, op)).parameters.values()
    except (TypeError, ValueError):
        return None
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def signature_differs(name, sig, aliases):
    """Why MindSpore's `name` does not take its torch base's parameters
    (`sig`, the op table's signature: "input, dim=None, *, dtype=None"), or
    None: each parameter the two have in the same place, after the first,
    must have the same name (a dump records keyword arguments by name) or
    one the runtime's binder maps to it (`aliases`, runtime/src/bind.rs's
    KEYWORD_ALIASES: MindSpore's `axis` is torch's `dim`). Tensor methods
    are builtins without a signature: their cases decide."""
    ms_names = _parameters(name)
    if ms_names is None:
        return None
    torch_names = []
    for part in sig.split(","):
        part = part.strip().split("=")[0].strip()
        if part == "*":
            break
        if part and not part.startswith("*"):
            torch_names.append(part)
    for i, (a, b) in enumerate(zip(ms_names, torch_names)):
        if i > 0 and aliases.get(a, a) != b:
            return f"parameter {i} is {a!r} in MindSpore, {b!r} in torch"
    return None


def ms_kwargs(name, kwargs, aliases):
    """A torch call's keyword arguments as MindSpore's `name` spells them
    (`dim=` as `axis=` where MindSpore's parameter is `axis`), so that the
    case runs in MindSpore as a MindSpore user writes it and the runtime
    binds that spelling."""
    ms_names = _parameters(name) or []
    spelled = {torch: ms_name for ms_name, torch in aliases.items() if ms_name in ms_names}
    return {k if k in ms_names else spelled.get(k, k): v for k, v in kwargs.items()}
