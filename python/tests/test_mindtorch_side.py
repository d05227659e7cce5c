"""The MSAdapter side without MSAdapter: a stand-in ``mindtorch.torch`` made
of MindSpore (MSAdapter's tensors are MindSpore's) for two_torches,
mindtorch_side and ms_exec; the PYTHONPATH way of finding the two torches in
a subprocess, with a stand-in MSAdapter ``torch`` shadowing the real one.
The real thing runs in tests/e2e.rs, under MSAdapter."""

import importlib
import os
import subprocess
import sys
import types

import mindspore
import numpy as np
import pytest
import torch

from conftest import make_call
from msprobe_rs.repro.data_generate import DType, Master, Size, TensorSpec

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fake_msadapter():
    """mindtorch.torch as the side uses it: from_numpy, tensor, dtypes, Size."""
    fake = types.ModuleType("mindtorch.torch")
    fake.from_numpy = mindspore.Tensor
    fake.tensor = mindspore.Tensor
    fake.Size = tuple
    fake.float32, fake.int64, fake.bfloat16 = mindspore.float32, mindspore.int64, mindspore.bfloat16
    return fake


@pytest.fixture
def msadapter(monkeypatch):
    """A stand-in MSAdapter installed as the mindtorch package; the side's modules imported fresh with it."""
    fake = fake_msadapter()
    package = types.ModuleType("mindtorch")
    package.torch = fake
    monkeypatch.setitem(sys.modules, "mindtorch", package)
    monkeypatch.setitem(sys.modules, "mindtorch.torch", fake)
    for name in ("msprobe_rs.repro.two_torches", "msprobe_rs.repro.mindtorch_side"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return fake


def test_the_mindtorch_package_is_msadapter_beside_the_real_torch(msadapter):
    two_torches = importlib.import_module("msprobe_rs.repro.two_torches")
    assert two_torches.msadapter is msadapter and two_torches.torch is torch
    assert two_torches.import_torches() == (msadapter, torch)


def test_a_missing_msadapter_is_named(msadapter, monkeypatch):
    two_torches = importlib.import_module("msprobe_rs.repro.two_torches")
    monkeypatch.setitem(sys.modules, "mindtorch.torch", None)
    with pytest.raises(two_torches.MissingTorch, match=r"^MSAdapter's torch \(the tested side\) is not importable "
                                                        r"\(ModuleNotFoundError: .*\): install MSAdapter"):
        two_torches.import_torches()
    with pytest.raises(SystemExit) as exited:
        two_torches.torches_or_exit()
    assert exited.value.code == 6


def test_values_become_msadapter_values(msadapter):
    side = importlib.import_module("msprobe_rs.repro.mindtorch_side")
    spec = TensorSpec("Float32", [2], low=0.0, high=1.0)
    tensor = side.to_msadapter(Master(spec, np.array([0.25, 1.0])))
    assert isinstance(tensor, mindspore.Tensor) and tensor.dtype == mindspore.float32
    assert tensor.asnumpy().tolist() == [0.25, 1.0]
    assert side.to_msadapter(DType("Int64")) is mindspore.int64
    assert side.to_msadapter([Size([2, 3]), (1, DType("Float32"))]) == [(2, 3), (1, mindspore.float32)]


def test_the_tested_side_differentiates_with_mindspore(msadapter):
    side = importlib.import_module("msprobe_rs.repro.mindtorch_side")
    call = make_call(PROPAGATION="backward", tested=mindspore.ops.mul)
    spec = TensorSpec("Float32", [2], low=0.0, high=4.0)
    a, b = Master(spec, np.array([1.0, 2.0])), Master(spec, np.array([3.0, 4.0]))
    outputs, grads = side.run_tested(call, [a, b], {}, [Master(spec, np.array([1.0, 0.5]))], "CPU")
    assert [side.tested_leaf(o)[1].tolist() for o in outputs] == [[3.0, 8.0]]
    assert [g.asnumpy().tolist() for g in grads] == [[3.0, 2.0], [1.0, 1.0]]
    assert side.tested_leaf(outputs[0])[0] == "Float32"


def test_dtype_labels_are_mindspores_names():
    from msprobe_rs.repro.ms_exec import ms_dtype_label

    assert ms_dtype_label(mindspore.float32) == "Float32"
    assert ms_dtype_label("mindtorch.bfloat16") == "BFloat16"
    assert ms_dtype_label("mindtorch.int64") == "Int64"


def test_msadapter_on_pythonpath_shadows_the_real_torch_which_is_found_behind_it(tmp_path):
    """MSAdapter enabled through PYTHONPATH: import torch is MSAdapter's; the
    real torch is imported from behind it, and sys.path is put back."""
    shadow = tmp_path / "msadapter"
    (shadow / "torch").mkdir(parents=True)
    (shadow / "torch" / "__init__.py").write_text("import mindspore\n\ntensor = mindspore.Tensor\n")
    code = ("import sys\nfrom msprobe_rs.repro import two_torches as t\n"
            "print(t.msadapter.__file__)\nprint(t.torch.__file__)\nprint(sys.argv[1] in sys.path)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(shadow), PYTHON_DIR]))
    done = subprocess.run([sys.executable, "-c", code, str(shadow)], env=env, capture_output=True, text=True, check=True)
    msadapter_file, torch_file, restored = done.stdout.splitlines()
    assert msadapter_file == str(shadow / "torch" / "__init__.py")
    assert torch_file == torch.__file__
    assert restored == "True"
