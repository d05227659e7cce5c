"""Inputs: random data in the dumped range, tensor files read safely."""

import numpy as np
import pytest
import torch

from msprobe_rs.repro.data_generate import (InputError, Master, Realizer, TensorSpec, band_mask, fold_class_targets,
                                            load_array, random_array, read_tensor_file, wants_grad)
from conftest import make_call


def test_random_data_spans_the_dumped_range():
    a = random_array(TensorSpec("torch.float32", [4, 5], low=-2.0, high=3.0), np.random.default_rng(0))
    assert a.shape == (4, 5) and a.dtype == np.float64
    assert a.reshape(-1)[0] == -2.0 and a.reshape(-1)[-1] == 3.0 and a.min() >= -2.0 and a.max() <= 3.0
    ints = random_array(TensorSpec("Int8", [100], low=-500, high=500), np.random.default_rng(0))
    assert ints.min() == -128 and ints.max() == 127 and ints.dtype == np.int64
    big = random_array(TensorSpec("torch.uint64", [3], low=0, high=2.0**70), np.random.default_rng(0))
    assert big.max() == 2**63 - 1
    special = random_array(TensorSpec("torch.float16", [5], low=float("-inf"), high=2.0), np.random.default_rng(0))
    assert special[0] == -np.inf and special[-1] == 2.0 and np.isfinite(special[1:]).all()
    nan = random_array(TensorSpec("torch.float16", [5], low=0.0, high=float("nan")), np.random.default_rng(0))
    assert np.isnan(nan[2]) and np.isfinite(np.delete(nan, 2)).all()
    assert not random_array(TensorSpec("torch.bool", [3], low=0, high=0), np.random.default_rng(0)).any()
    # A complex tensor's parts are drawn as floats from [-Max, Max] (msprobe's Max is the largest
    # modulus): the real part of the first element is -Max, the imaginary part of the last Max.
    z = random_array(TensorSpec("torch.complex64", [3], low=0.5, high=2.0), np.random.default_rng(0))
    assert z.shape == (3,) and np.iscomplexobj(z)
    assert z[0].real == -2.0 and z[-1].imag == 2.0
    parts = np.concatenate([z.real, z.imag])
    assert parts.min() >= -2.0 and parts.max() <= 2.0


def test_each_tensor_and_iteration_has_its_own_reproducible_stream():
    call = make_call()
    specs = [TensorSpec("torch.float32", [8], -1.0, 1.0), TensorSpec("torch.float32", [8], -1.0, 1.0)]
    first = Realizer(call, 0, None)(specs)
    again = Realizer(call, 0, None)(specs)
    other = Realizer(call, 1, None)(specs)
    assert np.array_equal(first[0].array, again[0].array)
    assert not np.array_equal(first[0].array[1:-1], first[1].array[1:-1])
    assert not np.array_equal(first[0].array[1:-1], other[0].array[1:-1])


def test_tensor_files_are_read_from_inside_the_folder_only(tmp_path):
    np.save(tmp_path / "x.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    spec = TensorSpec("Float32", [2, 3], data_name="x.npy")
    assert load_array(spec, str(tmp_path), "Mint.add.0").tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(InputError, match="shape \\(2, 3\\) differs from the dumped \\(6,\\)"):
        load_array(TensorSpec("Float32", [6], data_name="x.npy"), str(tmp_path), "Mint.add.0")
    with pytest.raises(InputError, match="refused: a tensor file name must be a bare file name"):
        load_array(TensorSpec("Float32", [6], data_name="../x.npy"), str(tmp_path), "Mint.add.0")
    with pytest.raises(InputError) as e:
        load_array(TensorSpec("Float32", [6]), str(tmp_path), "Mint.add.0")
    assert str(e.value) == "Mint.add.0: an input has no tensor file (data_name): real_data needs a tensor dump"
    with pytest.raises(InputError, match="no such file"):
        read_tensor_file(str(tmp_path / "gone.pt"))


def test_pickles_that_call_anything_are_refused(tmp_path):
    class Payload:
        def __reduce__(self):
            return (print, ("ran",))
    torch.save(Payload(), tmp_path / "bad.pt")
    with pytest.raises(InputError, match="refused: not a plain tensor file"):
        read_tensor_file(str(tmp_path / "bad.pt"))
    torch.save(torch.ones(2, dtype=torch.bfloat16), tmp_path / "ok.pt")
    assert read_tensor_file(str(tmp_path / "ok.pt")).tolist() == [1.0, 1.0]


def test_class_targets_fold_into_the_classes():
    args = [Master(TensorSpec("torch.float32", [3, 4]), np.zeros((3, 4))),
            Master(TensorSpec("torch.int64", [4]), np.array([-100, -7, 2, 3]))]
    fold_class_targets(args, {})
    assert args[1].array.tolist() == [-100, 3, 2, 3]


def test_which_inputs_are_differentiated():
    marked = Master(TensorSpec("torch.float32", [1], requires_grad=True), np.zeros(1))
    unmarked = Master(TensorSpec("Float32", [1]), np.zeros(1))
    null = Master(TensorSpec("Float32", [1], requires_grad=False), np.zeros(1))
    ints = Master(TensorSpec("Int32", [1]), np.zeros(1))
    assert wants_grad(marked, True) and not wants_grad(unmarked, True)
    assert wants_grad(unmarked, False) and not wants_grad(null, False) and not wants_grad(ints, False)


def test_a_random_attention_mask_in_sparse_mode_0_is_its_token_band():
    spec = TensorSpec("torch.bool", [1, 1, 4, 4], low=False, high=True)
    npu = ("atten_mask", "pre_tockens", "next_tockens")
    kwargs = {"atten_mask": Master(spec, random_array(spec, np.random.default_rng(0))), "pre_tockens": 65536, "next_tockens": 0}
    band_mask(kwargs, npu)
    assert kwargs["atten_mask"].array.dtype == bool
    assert (kwargs["atten_mask"].array[0, 0] == np.triu(np.ones((4, 4), dtype=bool), 1)).all()
    other = {"atten_mask": Master(spec, np.zeros((1, 1, 4, 4), dtype=bool)), "sparse_mode": 1}
    band_mask(other, npu)
    assert not other["atten_mask"].array.any()
    # MindSpore's flash_attention_score names them attn_mask, pre_tokens, next_tokens (a UInt8 mask).
    u8 = TensorSpec("UInt8", [1, 1, 4, 4], low=0, high=1)
    ms = {"attn_mask": Master(u8, np.ones((1, 1, 4, 4), dtype=np.uint8)), "pre_tokens": 65536, "next_tokens": 0}
    band_mask(ms, ("attn_mask", "pre_tokens", "next_tokens"))
    assert (ms["attn_mask"].array[0, 0] == np.triu(np.ones((4, 4), dtype=np.uint8), 1)).all()
