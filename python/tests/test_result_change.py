"""ResultChange (issue 23): inert outside `msprobe -f pytorch result_change`,
one atomic step file per record with the keys RC.md documents, each variant's
hooks installed and removable, and gradient hashes that see one ulp."""

import json
import math
import os
import sys

import numpy as np
import pytest
import torch

from msprobe_rs import ResultChange
from msprobe_rs import result_change

PARAM_KEYS = {"hash", "dtype", "shape", "max", "min", "mean", "norm"}


def small_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))


def step(model, rc):
    model.zero_grad()
    loss = model(torch.ones(2, 4)).sum()
    loss.backward()
    rc.record(loss)
    return loss


@pytest.fixture
def rc_env(tmp_path, monkeypatch):
    """The command's environment for one run: the records' folder, variant baseline, no op hashes."""
    folder = tmp_path / "rc"
    folder.mkdir()
    monkeypatch.setenv("MSPROBE_RC_DIR", str(folder))
    monkeypatch.setenv("MSPROBE_RC_VARIANT", "baseline")
    monkeypatch.delenv("MSPROBE_RC_OPS", raising=False)
    for key in result_change.RANK_VARIABLES:
        monkeypatch.delenv(key, raising=False)
    return folder


def load(folder, k):
    with open(folder / f"step_{k}.json") as f:
        return json.load(f)


def hook_counts(model):
    return [(len(m._forward_hooks), len(m._backward_hooks)) for m in model.modules()]


def test_does_nothing_outside_the_command(tmp_path, monkeypatch):
    monkeypatch.delenv("MSPROBE_RC_DIR", raising=False)
    monkeypatch.setenv("MSPROBE_RC_VARIANT", "module_hooks")
    monkeypatch.chdir(tmp_path)
    linear = torch.nn.functional.linear
    model = small_model()
    rc = ResultChange(model)
    step(model, rc)
    assert not rc.enabled
    assert hook_counts(model) == [(0, 0)] * 4
    assert torch.nn.functional.linear is linear
    assert torch._C._len_torch_function_stack() == 0
    assert os.listdir(tmp_path) == []


def test_writes_one_atomic_file_per_step_with_the_documented_keys(rc_env):
    model = small_model()
    rc = ResultChange(model)
    losses = [step(model, rc) for _ in range(2)]
    assert sorted(os.listdir(rc_env)) == ["step_0.json", "step_1.json"]
    for k, loss in enumerate(losses):
        data = load(rc_env, k)
        assert set(data) == {"step", "variant", "loss", "loss_hex", "grad_norm", "grad_norm_hex", "params"}
        assert (data["step"], data["variant"]) == (k, "baseline")
        assert data["loss"] == loss.item() and data["loss_hex"] == float.hex(loss.item())
        squares = sum(float(p.grad.double().pow(2).sum()) for p in model.parameters())
        assert data["grad_norm"] == math.sqrt(squares) and data["grad_norm_hex"] == float.hex(math.sqrt(squares))
        assert list(data["params"]) == ["0.weight", "0.bias", "2.weight", "2.bias"]
        weight = data["params"]["0.weight"]
        assert set(weight) == PARAM_KEYS
        assert (weight["dtype"], weight["shape"]) == ("torch.float32", [3, 4])
        assert weight["hash"] == result_change.tensor_hash(model[0].weight.grad)
        assert weight["max"] == float(model[0].weight.grad.double().max())


def test_a_missing_gradient_is_hashed_none(rc_env):
    model = small_model()
    model[2].bias.requires_grad_(False)
    rc = ResultChange(model)
    step(model, rc)
    assert load(rc_env, 0)["params"]["2.bias"]["hash"] == "none"


def test_an_interrupted_write_leaves_nothing(rc_env, monkeypatch):
    model = small_model()
    rc = ResultChange(model)

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        step(model, rc)
    assert os.listdir(rc_env) == []


def test_module_hooks_on_every_module_and_removable(rc_env, monkeypatch):
    monkeypatch.setenv("MSPROBE_RC_VARIANT", "module_hooks")
    model = small_model()
    rc = ResultChange(model)
    assert hook_counts(model) == [(1, 1)] * 4
    step(model, rc)
    assert load(rc_env, 0)["variant"] == "module_hooks"
    rc.remove()
    assert hook_counts(model) == [(0, 0)] * 4


def test_api_hooks_wrap_msprobes_names_and_are_removable(rc_env, monkeypatch):
    monkeypatch.setenv("MSPROBE_RC_VARIANT", "api_hooks")
    linear, add, matmul = torch.nn.functional.linear, torch.Tensor.__add__, torch.matmul
    rc = ResultChange(small_model())
    assert torch.nn.functional.linear is not linear and torch.nn.functional.linear.__wrapped__ is linear
    assert torch.Tensor.__add__ is not add and torch.matmul is not matmul
    assert len(rc._patched) > 500
    x = torch.arange(4.0)
    assert torch.equal(x + x, add(x, x))
    rc.remove()
    assert (torch.nn.functional.linear, torch.Tensor.__add__, torch.matmul) == (linear, add, matmul)
    assert "__add__" not in torch.Tensor.__dict__


def test_the_hook_lists_are_msprobes():
    names = result_change.HOOK_LISTS["functional"]
    assert "linear" in names and not any(n.startswith("#") or not n for n in names)
    assert "linalg.norm" in result_change.HOOK_LISTS["torch"] and "__add__" in result_change.HOOK_LISTS["tensor"]


def test_sync_reads_every_output_on_the_host(rc_env, monkeypatch):
    monkeypatch.setenv("MSPROBE_RC_VARIANT", "sync")
    reads = []
    item = torch.Tensor.item
    monkeypatch.setattr(torch.Tensor, "item", lambda t: reads.append(1) or item(t))
    rc = ResultChange(small_model())
    assert torch._C._len_torch_function_stack() == 1
    torch.ones(3).mul(2)
    assert len(reads) == 2  # ones, mul
    rc.remove()
    assert torch._C._len_torch_function_stack() == 0


def test_op_hashes_in_call_order_with_ops(rc_env, monkeypatch):
    monkeypatch.setenv("MSPROBE_RC_OPS", "1")
    model = small_model()
    rc = ResultChange(model)
    step(model, rc)
    step(model, rc)
    rc.remove()
    first, second = load(rc_env, 0)["ops"], load(rc_env, 1)["ops"]
    names = [name for name, _ in first]
    assert names[:3] == ["Torch.ones", "Functional.linear", "Torch.tanh"]
    assert first == second
    assert all(len(h) == 64 for _, h in first)


def test_the_hash_changes_when_a_gradient_changes_by_one_ulp(rc_env):
    model = small_model()
    rc = ResultChange(model)
    step(model, rc)
    grad = model[0].weight.grad
    grad[0, 0] = torch.nextafter(grad[0, 0], torch.tensor(math.inf))
    rc.record(torch.tensor(0.0))
    grad[0, 0] = torch.nextafter(grad[0, 0], torch.tensor(-math.inf))
    rc.record(torch.tensor(0.0))
    hashes = [load(rc_env, k)["params"]["0.weight"]["hash"] for k in range(3)]
    assert hashes[0] != hashes[1] and hashes[0] == hashes[2]
    assert len({load(rc_env, k)["params"]["0.bias"]["hash"] for k in range(3)}) == 1


def test_an_unknown_variant_is_refused(rc_env, monkeypatch):
    monkeypatch.setenv("MSPROBE_RC_VARIANT", "everything")
    with pytest.raises(ValueError, match=r"MSPROBE_RC_VARIANT must be one of \['baseline', 'sync', 'module_hooks', 'api_hooks'\], got 'everything'"):
        ResultChange(small_model())


def test_the_module_hooks_plumbing_is_not_recorded_as_ops(tmp_path, monkeypatch):
    monkeypatch.setenv("MSPROBE_RC_OPS", "1")
    ops = {}
    for variant in ("baseline", "module_hooks"):
        folder = tmp_path / variant
        folder.mkdir()
        monkeypatch.setenv("MSPROBE_RC_DIR", str(folder))
        monkeypatch.setenv("MSPROBE_RC_VARIANT", variant)
        model = small_model()
        rc = ResultChange(model)
        step(model, rc)
        rc.remove()
        ops[variant] = load(folder, 0)["ops"]
    assert ops["module_hooks"] == ops["baseline"]


def test_api_hooks_hook_the_outputs_grad_fn_as_msprobes_l1(rc_env, monkeypatch):
    monkeypatch.setenv("MSPROBE_RC_VARIANT", "api_hooks")
    calls = []
    monkeypatch.setattr(result_change, "_noop_grad_fn_hook", lambda grad_inputs, grad_outputs: calls.append(len(grad_outputs)))
    rc = ResultChange(small_model())
    x = torch.ones(3, requires_grad=True)
    y = torch.nn.functional.relu(x)
    with torch.no_grad():
        z = torch.nn.functional.relu(x)
    rc.remove()
    assert z.grad_fn is None
    y.sum().backward()
    assert calls == [1]
    assert torch.equal(x.grad, torch.ones(3))


def test_a_nan_loss_is_strict_json_with_its_exact_hex(rc_env):
    model = small_model()
    rc = ResultChange(model)
    model.zero_grad()
    loss = model(torch.full((2, 4), math.nan)).sum()
    loss.backward()
    rc.record(loss)
    text = (rc_env / "step_0.json").read_text()
    assert "NaN" not in text
    data = json.loads(text)
    assert (data["loss"], data["loss_hex"], data["grad_norm"], data["grad_norm_hex"]) == (None, "nan", None, "nan")
    assert data["params"]["0.weight"]["max"] is None


def test_a_rank_records_in_its_own_folder_and_says_so(rc_env, monkeypatch, capsys):
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("RANK_ID", "3")  # msrun's, before LOCAL_RANK
    model = small_model()
    rc = ResultChange(model)
    step(model, rc)
    assert rc.rank == 3
    assert sorted(os.listdir(rc_env)) == ["rank_3"]
    assert os.listdir(rc_env / "rank_3") == ["step_0.json"]
    assert capsys.readouterr().err.startswith("msprobe_rs.ResultChange: step 0 recorded on rank 3 (loss ")
    monkeypatch.setenv("RANK", "x")
    with pytest.raises(ValueError, match="RANK must be a rank number, got 'x'"):
        ResultChange(model)


def test_a_record_line_is_one_write_so_ranks_sharing_a_pipe_do_not_split_it(rc_env, monkeypatch):
    """print() writes the text and its newline in two calls, and two torchrun workers writing
    to one pipe interleaved them (one line holding both ranks' records); the record is one
    write of the whole line."""
    class Writes:
        def __init__(self):
            self.calls = []

        def write(self, text):
            self.calls.append(text)

        def flush(self):
            pass
    writes = Writes()
    monkeypatch.setattr(sys, "stderr", writes)
    model = small_model()
    rc = ResultChange(model)
    step(model, rc)
    assert len(writes.calls) == 1 and writes.calls[0].endswith(")\n"), writes.calls
    assert writes.calls[0].startswith("msprobe_rs.ResultChange: step 0 recorded (loss ")


def test_a_mindspore_cell_gets_cell_hooks_and_api_wrappers_and_needs_its_grads(rc_env, monkeypatch):
    ms = pytest.importorskip("mindspore")
    from mindspore import nn, ops

    net = nn.SequentialCell([nn.Dense(4, 3), nn.Tanh(), nn.Dense(3, 1)])
    monkeypatch.setenv("MSPROBE_RC_VARIANT", "module_hooks")
    rc = ResultChange(net)
    assert rc.mindspore and len(rc._handles) == 2 * len(list(net.cells_and_names()))
    rc.remove()
    monkeypatch.setenv("MSPROBE_RC_VARIANT", "api_hooks")
    original = ops.matmul
    rc = ResultChange(net)
    assert ops.matmul is not original and len(rc._patched) > 900
    rc.remove()
    assert ops.matmul is original
    grad = ms.value_and_grad(lambda x: net(x).sum(), None, net.trainable_params())
    loss, grads = grad(ms.Tensor(np.ones((2, 4), np.float32)))
    with pytest.raises(TypeError, match="needs the gradients of its 4 trainable parameters as mindspore.value_and_grad returns them, got none"):
        rc.record(loss)
    rc.record(loss, grads)
    record = json.loads((rc_env / "step_0.json").read_text())
    assert list(record["params"]) == [p.name for p in net.trainable_params()]
    assert record["loss_hex"] == float.hex(float(loss.asnumpy()))
