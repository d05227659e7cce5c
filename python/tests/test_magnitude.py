"""The rounding magnitudes of the scripts (magnitude.py), class by class, and a
script judged under --standard bound."""

import csv
import math
import os

import numpy as np
import pytest
import torch

from msprobe_rs.repro import npu_bench, pytorch_side
from msprobe_rs.repro.data_generate import Master, TensorSpec
from msprobe_rs.repro.magnitude import _mag_chain_lengths, gelu_parts, magnitudes, rounding_factors, rounding_of
from msprobe_rs.repro.torch_exec import torch_run
from conftest import make_call


def master(values, dtype="torch.float32", requires_grad=None):
    array = np.array(values, dtype=np.float64)
    return Master(TensorSpec(dtype, array.shape, requires_grad=requires_grad), array)


def runner(fn):
    def run(args, kwargs, grad_outputs, raise_precision):
        return torch_run(fn, args, kwargs, grad_outputs, "cpu", raise_precision=raise_precision)
    return run


def test_the_classes_come_from_the_op_table():
    assert rounding_of("Torch.sub", ("",)) == ("terms", 1, "other", ("input", "other", "alpha"))
    assert rounding_of("Tensor.__rsub__", ("",)) == ("terms", 0, "input", ("input", "other"))
    assert rounding_of("Torch.matmul", ("",)) == ("sums", ("input", "other"), ("product", "input", "other"))
    assert rounding_of("Torch.sum", ("",))[2] is None
    assert rounding_of("Functional.gelu", ("",)) == ("parts", "gelu", "smooth", ("input", "approximate"))
    assert rounding_of("Functional.scaled_dot_product_attention", ("",))[:3] == ("parts", "sdpa", "composite")
    assert rounding_of("NPU.npu_fusion_attention", ("",))[:3] == ("parts", "npu_fusion_attention", "nothing")
    assert rounding_of("Functional.flash_attention_score", ("MS.", ""))[:3] == ("parts", "flash_attention_score", "nothing")
    assert rounding_of("Functional.softmax", ("",))[:3] == ("parts", "softmax", "composite")
    assert rounding_of("Functional.log_softmax", ("",)) == ("composite",)
    # MindSpore's own meanings first, as the op table's lookup does.
    assert rounding_of("Functional.dense", ("MS.", ""))[0] == "sums"
    assert rounding_of("Functional.dense", ("",)) is None
    assert rounding_of("Functional.npu_fusion_attention", ("",)) is None
    terms = ("terms", None, None, ())
    assert (rounding_factors(terms, "float32", False), rounding_factors(terms, "float16", True)) == ((3.0, "float32"), (4.0, "float16"))
    assert rounding_factors(terms, "float32", True) == (16.0, "float32")
    assert rounding_factors(("sums",), "bfloat16", False) == (16.0, "float32")
    assert rounding_factors(("smooth",), "bfloat16", False) == (4.0, "bfloat16")
    assert rounding_factors(("composite",), "float64", True) == (64.0, "float64")
    assert rounding_factors(rounding_of("Functional.gelu", ("",)), "float32", True) == (32.0, "float32")
    assert rounding_factors(rounding_of("Functional.scaled_dot_product_attention", ("",)), "float32", True) == (64.0, "float32")
    assert rounding_factors(("sums",), "int64", False) is None


def test_terms_add_the_magnitudes_of_a_difference():
    a, b = master([1.0, -2.0, 0.5]), master([1.0, 3.0, -0.5])
    dy = master([1.0, -1.0, 2.0])
    outputs, grads = magnitudes(rounding_of("Torch.sub", ("",)), runner(torch.sub), [a, b], {"alpha": 2.0}, [dy])
    np.testing.assert_array_equal(outputs[0], [3.0, 8.0, 1.5])  # |a| + |2 b|: the difference cancels, its magnitude does not
    np.testing.assert_array_equal(grads[0], [1.0, 1.0, 2.0])  # |dy|
    np.testing.assert_array_equal(grads[1], [2.0, 2.0, 4.0])  # |2 dy|
    # The negated operand passed by keyword is negated too.
    outputs, _ = magnitudes(rounding_of("Torch.sub", ("",)), runner(torch.sub), [a], {"other": b}, None)
    np.testing.assert_array_equal(outputs[0], [2.0, 5.0, 1.0])


def test_sums_multiply_the_absolute_values():
    a = master([[1.0, -2.0], [3.0, 4.0]])
    b = master([[-1.0, 1.0], [1.0, -0.5]])
    outputs, grads = magnitudes(rounding_of("Torch.matmul", ("",)), runner(torch.matmul), [a, b], {}, None)
    np.testing.assert_array_equal(outputs[0], (np.abs(a.array) @ np.abs(b.array)).reshape(-1))
    assert grads == []


def test_smooth_is_the_first_order_condition():
    x = np.linspace(-3.0, 3.0, 13)
    dy = np.linspace(0.5, 1.5, 13)
    outputs, grads = magnitudes(rounding_of("Torch.tanh", ("",)), runner(torch.tanh), [master(x, "torch.float64")], {},
                                [master(dy, "torch.float64")])
    t = np.tanh(x)
    np.testing.assert_allclose(outputs[0], np.abs(t) + np.abs(x * (1.0 - t * t)), rtol=1e-9, atol=1e-12)
    g = dy * (1.0 - t * t)  # the gradient, its own first-order condition along x, and its parts |dy|(1 + y^2)
    np.testing.assert_allclose(grads[0], np.abs(g) + np.abs(x * dy * -2.0 * t * (1.0 - t * t)) + dy * (1.0 + t * t),
                               rtol=1e-8, atol=1e-12)


def test_gelu_adds_the_magnitudes_of_its_parts():
    x = np.array([-3.0, -0.75, 0.0, 0.5, 2.0])
    outputs, grads = magnitudes(rounding_of("Functional.gelu", ("",)), runner(torch.nn.functional.gelu),
                                [master(x, "torch.float64")], {}, [master(np.ones(5), "torch.float64")])
    cdf = np.array([0.5 * (1.0 + math.erf(v / math.sqrt(2.0))) for v in x])
    pdf = np.exp(-x * x / 2.0) / math.sqrt(2.0 * math.pi)
    y, dydx = x * cdf, cdf + x * pdf
    parts = np.abs(x) * 0.5 * (1.0 + np.abs(2.0 * cdf - 1.0))
    np.testing.assert_allclose(outputs[0], np.abs(y) + np.abs(x * dydx) + parts, rtol=1e-9, atol=1e-15)
    t = torch.from_numpy
    forward, backward = gelu_parts({"input": t(x)}, t(np.ones(5)), {})
    np.testing.assert_allclose(forward[0], parts, rtol=1e-15)
    assert backward[0][0] == "input"
    np.testing.assert_allclose(backward[0][1], 0.5 * (1.0 + np.abs(2.0 * cdf - 1.0)) + np.abs(x) * pdf, rtol=1e-14)
    # The gradient's magnitude holds the backward parts: at least them.
    assert (grads[0] >= backward[0][1]).all()
    # The tanh form's parts.
    forward, none = gelu_parts({"input": t(x), "approximate": "tanh"}, None, {})
    inner = np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3))
    np.testing.assert_allclose(forward[0], np.abs(x) * 0.5 * (1.0 + np.abs(inner)), rtol=1e-15)
    assert none == []


def test_attention_adds_the_sums_of_its_parts_where_a_row_attends_to_one_key():
    rng = np.random.default_rng(0)
    q, k, v = (master(rng.uniform(-1, 1, (1, 2, 4, 8)), "torch.float32") for _ in range(3))
    dy = master(rng.uniform(-1, 1, (1, 2, 4, 8)), "torch.float32")
    sdpa = torch.nn.functional.scaled_dot_product_attention
    entry = rounding_of("Functional.scaled_dot_product_attention", ("",))
    outputs, grads = magnitudes(entry, runner(sdpa), [q, k, v], {"is_causal": True}, [dy])
    # The first query attends to the first key alone: its weight is exactly 1, and its
    # output magnitude at least |V[0]| (the part P*|V|).
    vq = np.abs(v.array.astype(np.float32).astype(np.float64))
    first = outputs[0].reshape(1, 2, 4, 8)[:, :, 0, :]
    assert (first >= vq[:, :, 0, :] * (1 - 1e-12)).all()
    # Every gradient has its parts: the query's includes |dS|*|K| > 0 everywhere but where dS is 0.
    assert [g.shape for g in grads] == [(64,), (64,), (64,)] and all((g > 0).any() for g in grads)
    # With dropout the parts cannot be computed (random weights): no magnitudes.
    assert magnitudes(entry, runner(sdpa), [q, k, v], {"dropout_p": 0.5}, [dy]) == ([], [])


def test_a_fused_attentions_parts_are_its_whole_magnitudes():
    rng = np.random.default_rng(1)
    # BSH, two heads of two, causal: bfloat16 (eighths, exact in it), whose logits the kernel computes in float32.
    q, k, v, dy = (master(rng.integers(-8, 9, (1, 4, 4)) / 8.0, "torch.bfloat16") for _ in range(4))
    entry = rounding_of("NPU.npu_fusion_attention", ("",))
    outputs, grads = magnitudes(entry, runner(npu_bench.ref_npu_fusion_attention), [q, k, v, 2, "BSH"],
                                {"sparse_mode": 2, "scale": 0.5}, [dy])
    # attention_out, softmax_max and softmax_sum ([1, 2, 4, 8]), and dq, dk, dv.
    assert [o.shape for o in outputs] == [(16,), (64,), (64,)]
    assert [g.shape for g in grads] == [(16,), (16,), (16,)] and all((g >= 0).all() and (g > 0).any() for g in grads)
    # attention_out's is P*|V| within float32's share of bfloat16's unit (the logits' terms).
    qt, kt, vt = (torch.from_numpy(m.array).reshape(1, 4, 2, 2).transpose(1, 2) for m in (q, k, v))
    p = torch.softmax((qt @ kt.transpose(-1, -2) * 0.5).masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), -math.inf), -1)
    pv = (p @ vt.abs()).transpose(1, 2).reshape(-1).numpy()
    assert (outputs[0] >= pv * (1 - 1e-12)).all() and (outputs[0] <= pv * (1 + 1e-3)).all()


@pytest.mark.parametrize("dtype", ["torch.float32", "torch.float64"])
def test_composite_is_at_least_the_output(dtype):
    x = master(np.arange(12.0).reshape(3, 4) / 7.0 - 0.5, dtype)
    dy = master(np.linspace(-1.0, 1.0, 12).reshape(3, 4), dtype)
    outputs, grads = magnitudes(rounding_of("Functional.softmax", ("",)), runner(torch.nn.functional.softmax), [x],
                                {"dim": -1}, [dy])
    y = torch.softmax(torch.from_numpy(x.array), dim=-1).numpy().reshape(-1)
    assert outputs[0].shape == (12,) and (outputs[0] >= np.abs(y)).all() and (outputs[0] > np.abs(y)).any()
    assert grads[0].shape == (12,) and np.isfinite(grads[0]).all()


def test_selects_take_the_copies_and_sum_the_gradients_of_the_places_chosen():
    """max_pool1d, windows of 3 at stride 2: both windows choose x[2] = 9, so its gradient sums both
    output gradients, 1.5 - 2.0 = -0.5, and its magnitude is 1.5 + 2.0 = 3.5 (the sum cancels)."""
    x, dy = master([[0.0, 1.0, 9.0, 2.0, 3.0]]), master([[1.5, -2.0]])
    entry = rounding_of("Functional.max_pool1d", ("",))
    assert entry == ("selects",) and rounding_factors(entry, "float32", False) == (1.0, "float32")
    assert rounding_factors(entry, "float32", True) == (16.0, "float32")
    outputs, grads = magnitudes(entry, runner(torch.nn.functional.max_pool1d), [x], {"kernel_size": 3, "stride": 2}, [dy])
    np.testing.assert_array_equal(outputs[0], [9.0, 9.0])
    np.testing.assert_array_equal(grads[0], [0.0, 0.0, 3.5, 0.0, 0.0])


def test_a_class_the_call_cannot_take_has_no_magnitudes():
    def broken(args, kwargs, grad_outputs, raise_precision):
        raise RuntimeError("no kernel")
    assert magnitudes(("sums",), broken, [master([1.0])], {}, None) == ([], [])
    assert magnitudes(None, broken, [master([1.0])], {}, None) == ([], [])


def details(out):
    name = next(p for p in os.listdir(out) if p.startswith("accuracy_checking_details_"))
    with open(out / name, encoding="utf-8-sig", newline="") as f:
        return list(csv.reader(f))


def test_a_script_judges_by_the_rounding_bound(tmp_path):
    def inputs():
        spec = TensorSpec("torch.float32", [64], low=-1.0, high=1.0)
        return [spec, spec], {}, None
    call = make_call(inputs=inputs, tested=torch.sub, bench=torch.sub, API_NAME="Torch.sub.0", API_OP="Torch.sub")
    out = tmp_path / "bound"
    assert pytorch_side.run(call, ["--output-dir", str(out), "--standard", "bound"]) == 0
    rows = details(out)
    assert rows[0][-2:] == ["Standard", "Standard Metrics"]
    assert (rows[1][7], rows[1][9]) == ("pass", "rounding bound")
    assert rows[1][10].startswith("bound_ratio=") and rows[1][10].endswith("; beyond_bound=0; k=3; u=5.96046e-08")
    perturbed = tmp_path / "perturbed"
    assert pytorch_side.run(call, ["--output-dir", str(perturbed), "--standard", "bound", "--perturb", "1e-4"]) == 3
    row = details(perturbed)[1]
    assert (row[7], row[9]) == ("error", "rounding bound")
    assert row[8].startswith("rounding bound: 64 of 64 elements beyond k*(u*magnitude + eta) + ulp/2 (k=3, u=5.96046e-08); worst ")
    # An API the op table does not hold is judged by the api standard's rule, and says so.
    other = make_call(inputs=inputs, tested=torch.sub, bench=torch.sub, API_NAME="Torch.sub.0", API_OP="Torch.not_in_table")
    plain = tmp_path / "plain"
    assert pytorch_side.run(other, ["--output-dir", str(plain), "--standard", "bound"]) == 0
    row = details(plain)[1]
    assert row[9] == "benchmark" and "no rounding bound for this output: judged by the api standard" in row[8]


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norms_closed_form_holds_what_composite_measures(training, affine):
    """batch_norm's parts (no reruns) against Composite's measured magnitudes of the same call:
    never much below them (the bound keeps Composite's k) and not much above (it still catches
    errors): per element within [0.5, 4] times, and within [0.6, 2] times on the median
    (measured: 0.62 to 2.8, medians 0.65 to 1.8)."""
    rng = np.random.default_rng(7)
    x = master(rng.normal(0.3, 1.2, (4, 3, 5, 6)))
    dy = master(rng.normal(0.0, 1.0, (4, 3, 5, 6)))
    rm, rv = master(rng.normal(0.0, 0.5, 3), requires_grad=False), master(rng.uniform(0.5, 2.0, 3), requires_grad=False)
    kwargs = {"training": training, "eps": 1e-5}
    if affine:
        kwargs.update(weight=master(rng.normal(1.0, 0.3, 3)), bias=master(rng.normal(0.0, 0.2, 3)))
    run = runner(torch.nn.functional.batch_norm)
    closed = magnitudes(rounding_of("Functional.batch_norm", ("",)), run, [x, rm, rv], kwargs, [dy])
    measured = magnitudes(("composite",), run, [x, rm, rv], kwargs, [dy])
    assert rounding_of("Functional.batch_norm", ("",))[:3] == ("parts", "batch_norm", "nothing")
    assert len(closed[0]) == 1 and len(closed[1]) == len(measured[1]) == (3 if affine else 1)
    for got, want in zip(closed[0] + closed[1], measured[0] + measured[1]):
        ratio = got / want
        assert got.shape == want.shape and 0.5 <= ratio.min() and ratio.max() <= 4.0, (ratio.min(), np.median(ratio), ratio.max())
        assert 0.6 <= np.median(ratio) <= 2.0, np.median(ratio)


def test_accumulation_chains_mirror_the_op_tables_lengths():
    """The cases of runtime/src/ops/chain.rs's tests, the same lengths."""
    def shapes(named):
        return lambda name: named.get(name)
    linear = shapes({"input": [4, 128, 768], "weight": [2304, 768], "bias": [2304]})
    assert _mag_chain_lengths(("linear",), linear, 4 * 128 * 2304, ["input", "weight", "bias"]) == (768, [2304, 512, 512])
    bmm = shapes({"input": [12, 64, 32], "mat2": [12, 32, 64]})
    assert _mag_chain_lengths(("product", "input", "mat2"), bmm, 12 * 64 * 64, ["input", "mat2"]) == (32, [64, 64])
    shared = shapes({"input": [8, 64, 32], "other": [32, 16]})
    assert _mag_chain_lengths(("product", "input", "other"), shared, 8 * 64 * 16, ["other"])[1] == [512]
    addmm = shapes({"input": [16], "mat1": [100, 8], "mat2": [8, 16]})
    assert _mag_chain_lengths(("product", "mat1", "mat2"), addmm, 1600, ["input"])[1] == [100]
    conv = shapes({"input": [8, 64, 56, 56], "weight": [128, 64, 3, 3]})
    assert _mag_chain_lengths(("conv",), conv, 8 * 128 * 56 * 56, ["input", "weight", None]) == (576, [1152, 8 * 56 * 56, None])
    assert _mag_chain_lengths(None, linear, 1, []) is None


def test_a_long_chain_grows_the_sums_magnitude_by_its_square_root():
    """mm of [2, 512] @ [512, 3]: K = 512 terms, 4 times the 128 the rulebook's k covers, so
    the magnitude |A|.|B| doubles; the gradients' chains (3 and 2 terms) keep theirs."""
    a, b = np.full((2, 512), 0.5), np.full((512, 3), 0.25)
    args = [master(a, requires_grad=True), master(b, requires_grad=True)]
    grad = [master(np.ones((2, 3)))]
    outputs, grads = magnitudes(rounding_of("Torch.mm", ("",)), runner(torch.mm), args, {}, grad)
    np.testing.assert_allclose(outputs[0], np.full(6, 2.0 * 512 * 0.125))
    np.testing.assert_allclose(grads[0], np.full(1024, 3 * 0.25))
    np.testing.assert_allclose(grads[1], np.full(1536, 2 * 0.5))
