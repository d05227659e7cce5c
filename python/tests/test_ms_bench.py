"""The torch equivalents of MindSpore signatures (torch only)."""

import numpy as np
import torch

from msprobe_rs.repro import ms_bench
from msprobe_rs.repro.data_generate import Master, TensorSpec


def test_conv2d_same_padding_keeps_the_size():
    x, w = torch.randn(1, 2, 5, 5, dtype=torch.float64), torch.randn(3, 2, 3, 3, dtype=torch.float64)
    assert ms_bench.ms_ops_conv2d(x, w, pad_mode="same").shape == (1, 3, 5, 5)
    assert ms_bench.ms_ops_conv2d(x, w).shape == (1, 3, 3, 3)
    assert torch.allclose(ms_bench.ms_ops_conv2d(x, w, pad_mode="pad", padding=1), torch.nn.functional.conv2d(x, w, padding=1))


def test_signatures_that_differ_from_torch():
    x = torch.tensor([[1.0, 2.0], [3.0, 5.0]], dtype=torch.float64)
    assert ms_bench.ms_tensor_var(x).item() == torch.var(x, correction=0).item()
    assert ms_bench.ms_tensor_std(x, 0, 1).tolist() == torch.std(x, dim=0, correction=1).tolist()
    assert ms_bench.ms_tensor_transpose(torch.zeros(2, 3, 4)).shape == (4, 3, 2)
    assert ms_bench.ms_ops_gather(x, torch.tensor([1], dtype=torch.int32), 0).tolist() == [[3.0, 5.0]]
    hot = ms_bench.ms_ops_one_hot(torch.tensor([0, 2], dtype=torch.int32), 3, 5.0, 1.0)
    assert hot.tolist() == [[5.0, 1.0, 1.0], [1.0, 1.0, 5.0]]


def test_the_keepdims_reductions_take_mindspores_names():
    x = torch.tensor([[1.0, float("nan"), 4.0], [3.0, 5.0, -2.0]], dtype=torch.float64)
    y = torch.tensor([[1.0, 2.0, 4.0], [3.0, 5.0, -2.0]], dtype=torch.float64)
    assert ms_bench.ms_ops_amax(y).item() == 5.0 and ms_bench.ms_ops_amin(y, 1, True).tolist() == [[1.0], [-2.0]]
    assert ms_bench.ms_ops_amax(y, axis=[0, 1], keepdims=True).shape == (1, 1)
    assert ms_bench.ms_ops_nansum(x).item() == 11.0 and ms_bench.ms_ops_nanmean(x, 1, keepdims=True).tolist() == [[2.5], [2.0]]
    var, mean = ms_bench.ms_ops_var_mean(y, 1)
    assert var.tolist() == torch.var(y, dim=1, correction=0).tolist() and mean.tolist() == [7.0 / 3.0, 2.0]
    std, _ = ms_bench.ms_ops_std_mean(y, axis=0, ddof=1, keepdims=True)
    assert std.tolist() == torch.std(y, dim=0, correction=1, keepdim=True).tolist()


class FakeTensor:
    """A MindSpore tensor as ms_bench reads it (asnumpy)."""

    def __init__(self, values):
        self.values = np.asarray(values)

    def asnumpy(self):
        return self.values


def test_dropout_keeps_what_the_tested_run_kept():
    ms_bench.TESTED_RUN.clear()
    x = torch.tensor([1.0, 2.0, 0.0, 4.0], dtype=torch.float64)
    try:
        ms_bench.ms_ops_dropout(x, 0.5)
    except ValueError as exc:
        assert str(exc) == "ms_ops_dropout: the tested run's mask is unknown"
    source = Master(TensorSpec("Float32", [4]), np.array([1.0, 2.0, 0.0, 4.0]))
    ms_bench.TESTED_RUN.update(args=[source], kwargs={}, outputs=[FakeTensor([2.0, 0.0, 0.0, 8.0])],
                               grads=[FakeTensor([2.0, 0.0, 2.0, 2.0])])
    assert ms_bench.ms_ops_dropout(x, 0.5).tolist() == [2.0, 0.0, 0.0, 8.0]
    assert ms_bench.tested_kept().tolist() == [True, False, True, True]
    ms_bench.TESTED_RUN.clear()
