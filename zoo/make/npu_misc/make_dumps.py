"""NPU test dumps for the `NPU.` entries of runtime/src/ops/npu_misc.rs, made without an NPU:
msprobe-format tensor dumps (task tensor, level L1, PyTorch) of one call of each of
npu_linear, npu_confusion_transpose, npu_apply_adam, npu_apply_adam_w, npu_layer_norm_eval,
npu_group_norm_silu, npu_moe_gating_top_k_softmax, npu_sort_v2 and matmul_backward, written as
msprobe's PyTorch dumper writes an `NPU.<op>.<N>` call (its torch_npu hook): `input_args`,
`input_kwargs` (`out=(var, m, v)` of the optimizer steps as a list), `output` (the returned
tuple flattened, None as null), each tensor with its dtype, shape, Max/Min/Mean/Norm (of the
float32 values; a bool tensor's Max is any, Min all, Mean and Norm null), requires_grad and
the `.pt` file (torch.save) in dump_tensor_data/; the backward entries of npu_linear and
npu_confusion_transpose (`input`: the output gradient, `output`: the input gradients in input
order, as torch_npu's autograd functions return them).

The recorded outputs and gradients are what an independent implementation computes: torch on
the CPU in float32, the dtype of the call (these compositions are written here, not taken from
the runtime or from msprobe). Then `planted/` is the same dump with planted errors, each a
recorded value of one row changed (listed in PLANTED; tests/npu_misc.rs pins each row's
verdict and Message).

    python make_dumps.py OUT_DIR      # writes OUT_DIR/clean and OUT_DIR/planted

zoo/make/make_npu_misc.sh runs it into tests/fixtures/npu_misc/. Seeded: the same bytes each
run (torch's CPU kernels of this torch version).
"""

import json
import shutil
import sys
from pathlib import Path

import torch

SEED = 22
OUT = Path(sys.argv[1])


def stats(t):
    t = t.detach()
    if t.dtype == torch.bool:
        return {"Max": bool(t.any()), "Min": bool(t.all()), "Mean": None, "Norm": None}
    f = t.float()
    return {"Max": f.max().item(), "Min": f.min().item(), "Mean": f.mean().item(), "Norm": f.norm().item()}


class Dump:
    """dump.json's entries and their tensor files, in call order."""

    def __init__(self, folder):
        self.folder = folder
        self.data_dir = folder / "dump_tensor_data"
        self.data_dir.mkdir(parents=True)
        self.data = {}

    def value(self, v, name, requires_grad=False):
        if v is None:
            return None
        if isinstance(v, torch.Tensor):
            file = f"{name}.pt"
            torch.save(v.detach().clone(), self.data_dir / file)
            return {"type": "torch.Tensor", "dtype": str(v.dtype), "shape": list(v.shape), **stats(v), "requires_grad": requires_grad, "data_name": file}
        if isinstance(v, (list, tuple)):
            return [self.value(x, f"{name}.{i}", requires_grad) for i, x in enumerate(v)]
        return {"type": type(v).__name__, "value": v}

    def forward(self, api, args, kwargs, outputs, requires_grad=False):
        key = f"{api}.forward"
        self.data[key] = {
            "input_args": [self.value(a, f"{key}.input.{i}", requires_grad and isinstance(a, torch.Tensor)) for i, a in enumerate(args)],
            "input_kwargs": {k: self.value(v, f"{key}.input.{k}") for k, v in kwargs.items()},
            "is_recompute": False,
            "output": [self.value(o, f"{key}.output.{i}", requires_grad) for i, o in enumerate(outputs)],
        }

    def backward(self, api, grad_outputs, grad_inputs):
        key = f"{api}.backward"
        self.data[key] = {
            "input": [self.value(g, f"{key}.input.{i}") for i, g in enumerate(grad_outputs)],
            "output": [self.value(g, f"{key}.output.{i}") for i, g in enumerate(grad_inputs)],
        }

    def write(self):
        header = {"task": "tensor", "level": "L1", "framework": "pytorch", "dump_data_dir": "dump_tensor_data", "data": self.data}
        (self.folder / "dump.json").write_text(json.dumps(header, indent=1) + "\n")


def randn(*shape):
    return torch.randn(*shape, dtype=torch.float32)


def make(folder):
    torch.manual_seed(SEED)
    d = Dump(folder)

    # npu_linear(input, weight, bias=None) with its backward.
    x, w, b = randn(4, 6).requires_grad_(), randn(5, 6).requires_grad_(), randn(5).requires_grad_()
    y = torch.addmm(b, x, w.t())
    g = randn(4, 5)
    gx, gw, gb = torch.autograd.grad(y, [x, w, b], g)
    d.forward("NPU.npu_linear.0", [x, w, b], {}, [y], requires_grad=True)
    d.backward("NPU.npu_linear.0", [g], [gx, gw, gb])

    # npu_confusion_transpose(input, perm, shape, transpose_first) with its backward.
    x = randn(2, 3, 4).requires_grad_()
    y = x.transpose(1, 2).reshape(2, 12)
    g = randn(2, 12)
    (gx,) = torch.autograd.grad(y, [x], g)
    d.forward("NPU.npu_confusion_transpose.0", [x, [0, 2, 1], [2, 12], True], {}, [y], requires_grad=True)
    d.backward("NPU.npu_confusion_transpose.0", [g], [gx])

    # npu_apply_adam(beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, use_locking, use_nesterov, out=(var, m, v)).
    var, m, v, grad = randn(3, 4), randn(3, 4), randn(3, 4).abs(), randn(3, 4)
    b1, b2, eps, lr, b1p, b2p = 0.9, 0.999, 1e-8, 0.001, 0.9 ** 3, 0.999 ** 3
    m_t = torch.lerp(m, grad, 1 - b1)
    v_t = torch.lerp(v, grad * grad, 1 - b2)
    var_t = var - (lr * (1 - b2p) ** 0.5 / (1 - b1p)) * m_t / (torch.sqrt(v_t) + eps)
    d.forward("NPU.npu_apply_adam.0", [b1p, b2p, lr, b1, b2, eps, grad, False, False], {"out": [var, m, v]}, [var_t, m_t, v_t])

    # npu_apply_adam_w(beta1_power, beta2_power, lr, weight_decay, beta1, beta2, epsilon, grad, max_grad_norm, amsgrad, maximize, out=(var, m, v)):
    # the powers of the previous step, torch.optim.AdamW's update of this one.
    var, m, v, grad = randn(2, 5), randn(2, 5), randn(2, 5).abs(), randn(2, 5)
    wd, step = 0.01, 4
    m_t = m * b1 + grad * (1 - b1)
    v_t = v * b2 + grad * grad * (1 - b2)
    denom = (v_t / (1 - b2 ** step)).sqrt() + eps
    var_t = var * (1 - lr * wd) - lr / (1 - b1 ** step) * m_t / denom
    d.forward("NPU.npu_apply_adam_w.0", [b1 ** (step - 1), b2 ** (step - 1), lr, wd, b1, b2, eps, grad, None, False, False], {"out": [var, m, v]}, [var_t, m_t, v_t])

    # npu_layer_norm_eval(input, normalized_shape, weight=None, bias=None, eps=1e-05).
    x, w, b = randn(3, 8), randn(8), randn(8)
    d.forward("NPU.npu_layer_norm_eval.0", [x, [8], w, b], {"eps": 1e-5}, [torch.nn.functional.layer_norm(x, [8], w, b, 1e-5)])

    # npu_group_norm_silu(input, weight, bias, group, eps=1e-05) -> (out, mean, rstd).
    x, w, b = randn(2, 6, 3, 4), randn(6), randn(6)
    y = torch.nn.functional.silu(torch.nn.functional.group_norm(x, 3, w, b, 1e-5))
    flat = x.reshape(2, 3, -1)
    mean, var = flat.mean(-1), flat.var(-1, unbiased=False)
    d.forward("NPU.npu_group_norm_silu.0", [x, w, b, 3], {"eps": 1e-5}, [y, mean, torch.rsqrt(var + 1e-5)])

    # npu_moe_gating_top_k_softmax(x, finished=None, k=1) -> (y, expert_idx, row_idx).
    x, finished = randn(5, 8), torch.tensor([False, False, True, False, False])
    top, idx = torch.topk(torch.softmax(x, -1), 2, -1)
    idx = torch.where(finished[:, None], 8, idx).to(torch.int32)
    row_idx = (torch.arange(2)[None, :] * 5 + torch.arange(5)[:, None]).to(torch.int32)
    d.forward("NPU.npu_moe_gating_top_k_softmax.0", [x, finished], {"k": 2}, [top, idx, row_idx])

    # npu_sort_v2(self, dim=-1, descending=False, out=None).
    x = randn(3, 7)
    d.forward("NPU.npu_sort_v2.0", [x], {"dim": -1, "descending": True}, [torch.sort(x, -1, descending=True).values])

    # matmul_backward(grad, self, other, mask) -> (grad_self, grad_other).
    a, o = randn(2, 3, 4), randn(4, 5)
    g = randn(2, 3, 5)
    d.forward("NPU.matmul_backward.0", [g, a, o, [True, True]], {}, [g @ o.t(), (a.transpose(1, 2) @ g).sum(0)])
    return d


# The planted errors of planted/: (entry, output index, what is done to the recorded tensor).
PLANTED = [
    ("NPU.npu_linear.0.forward", 0, "one element +1.0"),
    ("NPU.npu_linear.0.backward", 1, "the weight gradient x 1.01"),
    ("NPU.npu_confusion_transpose.0.forward", 0, "two elements swapped"),
    ("NPU.npu_apply_adam.0.forward", 0, "var x 1.001"),
    ("NPU.npu_apply_adam_w.0.forward", 1, "m + 1e-3"),
    ("NPU.npu_layer_norm_eval.0.forward", 0, "one element +0.5"),
    ("NPU.npu_group_norm_silu.0.forward", 2, "rstd x 1.01"),
    ("NPU.npu_moe_gating_top_k_softmax.0.forward", 1, "one expert index changed"),
    ("NPU.npu_sort_v2.0.forward", 0, "ascending instead of descending"),
    ("NPU.matmul_backward.0.forward", 1, "grad_other x 0.99"),
]


def plant(t, what):
    t = t.clone()
    flat = t.view(-1)
    if what == "one element +1.0":
        flat[3] += 1.0
    elif what == "the weight gradient x 1.01" or what == "rstd x 1.01":
        t *= 1.01
    elif what == "two elements swapped":
        flat[[0, 1]] = flat[[1, 0]]
    elif what == "var x 1.001":
        t *= 1.001
    elif what == "m + 1e-3":
        t += 1e-3
    elif what == "one element +0.5":
        flat[5] += 0.5
    elif what == "one expert index changed":
        flat[0] = (flat[0] + 1) % 8
    elif what == "ascending instead of descending":
        t = torch.flip(t, [-1]).contiguous()
    elif what == "grad_other x 0.99":
        t *= 0.99
    else:
        raise ValueError(what)
    return t


def main():
    clean = make(OUT / "clean")
    clean.write()
    planted = OUT / "planted"
    shutil.copytree(OUT / "clean", planted)
    data = json.loads((planted / "dump.json").read_text())
    for key, i, what in PLANTED:
        entry = data["data"][key]["output"][i]
        path = planted / "dump_tensor_data" / entry["data_name"]
        t = plant(torch.load(path), what)
        torch.save(t, path)
        entry.update(stats(t))
    (planted / "dump.json").write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
