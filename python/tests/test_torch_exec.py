"""torch execution and a whole PyTorch run through the entry point."""

import csv
import os

import numpy as np
import torch

from msprobe_rs.repro import pytorch_side
from msprobe_rs.repro.data_generate import DType, Master, TensorSpec
from msprobe_rs.repro.torch_exec import flatten_outputs, to_torch, torch_run
from conftest import make_call


def test_the_bench_raises_precision_except_for_exact_ops():
    m = Master(TensorSpec("torch.float16", [2]), np.array([0.1, 0.2]))
    assert to_torch(m, "cpu", False).dtype == torch.float16
    assert to_torch(m, "cpu", True).dtype == torch.float32
    assert float(to_torch(m, "cpu", True)[0]) == float(torch.tensor(0.1, dtype=torch.float16))
    assert to_torch(DType("torch.float32"), "cpu", True) == torch.float64
    assert to_torch(DType("torch.float32"), "cpu", True, exact_op=True) == torch.float32
    assert flatten_outputs((1, [2, (3,)])) == [1, 2, 3]


def test_backward_differentiates_the_float_inputs():
    x = Master(TensorSpec("torch.float32", [3], requires_grad=True), np.array([1.0, 2.0, 3.0]))
    g = Master(TensorSpec("torch.float32", [3]), np.ones(3))
    outputs, grads = torch_run(torch.mul, [x, x], {}, [g], "cpu", raise_precision=True)
    assert outputs[0].dtype == torch.float64 and grads[0].tolist() == [1.0, 2.0, 3.0]


def test_a_call_runs_to_its_csvs(tmp_path, capsys):
    def inputs():
        spec = TensorSpec("torch.float32", [4], low=-1.0, high=1.0)
        return [spec, spec], {}, None
    call = make_call(inputs=inputs, tested=torch.add, bench=torch.add)
    out = tmp_path / "out"
    assert pytorch_side.run(call, ["--output-dir", str(out)]) == 0
    details = next(p for p in os.listdir(out) if p.startswith("accuracy_checking_details_"))
    with open(out / details, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[1][0] == "Torch.add.0.forward.output.0" and rows[1][7] == "pass"
    assert rows[1][8] == "tested: torch on cpu in the dumped dtype; bench: torch on cpu at raised precision"
    perturbed = tmp_path / "perturbed"
    assert pytorch_side.run(call, ["--output-dir", str(perturbed), "--perturb", "0.01"]) == 3
    assert "Torch.add.0 forward: tested on cpu" in capsys.readouterr().out


def test_a_script_failure_is_exit_internal(tmp_path, capsys):
    def inputs():
        raise KeyError("broken head")
    call = make_call(inputs=inputs, tested=torch.add, bench=torch.add)
    assert pytorch_side.run(call, ["--output-dir", str(tmp_path)]) == 6
    assert "KeyError: 'broken head'" in capsys.readouterr().err
