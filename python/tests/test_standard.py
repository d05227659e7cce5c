"""The precision standards on small cases (runtime/tests/standard.rs holds
them to the shared cases; these pin the pieces)."""

import numpy as np

from msprobe_rs.repro.standard import _StdElementBound, _std_base_name, _std_rule, judge, metrics


def arr(*values):
    return np.array(values, dtype=np.float64)


def test_metrics_over_the_finite_elements():
    cosine, max_abs, max_rel = metrics(arr(1.0, 2.0, np.nan), arr(1.0, 2.5, np.nan))
    assert round(cosine, 6) == round(float(np.dot([1, 2], [1, 2.5]) / (np.sqrt(5) * np.sqrt(7.25))), 6)
    assert (max_abs, max_rel) == (0.5, 0.2)
    assert metrics(arr(np.inf), arr(np.inf)) == (1.0, 0.0, 0.0)
    assert metrics(arr(0.0, 0.0), arr(1.0, 0.0))[0] == 0.0


def test_the_msprobe_rule():
    args = ("msprobe", "Torch.add", False, False, "float32")
    assert judge(*args, arr(1.0, 2.0), arr(1.0, 2.0), None, 0.99, 0.001) == ("pass", "", "cosine and max abs", "")
    status, message, _, _ = judge(*args, arr(1.0, 2.0), arr(1.0, 2.1), None, 0.99, 0.001)
    assert status == "error"
    assert message == "max absolute error 0.1 is not below the threshold 0.001"
    status, message, _, _ = judge(*args, arr(1.0, np.nan), arr(1.0, 2.0), None, 0.99, 0.001)
    assert status == "error" and message.startswith("NaN/Inf differ: tested has 1 NaN and 0 Inf, bench has 0 NaN and 0 Inf")
    assert judge(*args, arr(), arr(), None, 0.99, 0.001) == ("pass", "empty tensor", "cosine and max abs", "")


def test_rules_by_api_and_dtype():
    assert _std_rule("api", "Torch.add", False, False, "float32", False) == "absolute threshold"
    assert _std_rule("api", "Torch.add", False, False, "float32", True) == "absolute threshold"
    assert _std_rule("api", "Torch.matmul", False, False, "float16", False) == "ulp"
    assert _std_rule("api", "Torch.matmul", True, False, "float16", False) == "benchmark"
    assert _std_rule("api", "Functional.conv2d", False, False, "float32", False) == "thousandth"
    assert _std_rule("api", "Torch.add", False, False, "int64", False) == "binary equality"
    assert _std_rule("msprobe", "Torch.split", False, True, "float32", False) == "binary equality"
    # bound: the rounding bound where the output has a magnitude, else the api standard's rule.
    assert _std_rule("bound", "Torch.add", False, False, "bfloat16", True) == "rounding bound"
    assert _std_rule("bound", "Torch.add", True, False, "bfloat16", True) == "rounding bound"
    assert _std_rule("bound", "Torch.add", False, False, "bfloat16", False) == "absolute threshold"
    assert _std_rule("bound", "Torch.matmul", True, False, "bfloat16", False) == "benchmark"
    assert _std_rule("bound", "Torch.add", False, False, "int64", True) == "binary equality"
    assert _std_rule("bound", "Tensor.view", False, True, "float32", True) == "binary equality"
    assert _std_base_name("Tensor.__radd__") == "add"
    assert _std_base_name("Tensor.__rsub__") == "rsub"
    assert _std_base_name("Tensor.add_") == "add"


def test_the_api_rules_say_what_failed():
    status, message, rule, text = judge("api", "Torch.eq", False, False, "float32", arr(1, 0, 1), arr(1, 1, 1), None, 0.99, 0.001)
    assert (status, rule) == ("error", "binary equality")
    assert message == "binary equality: 1 of 3 elements differ (max absolute error 1)"
    assert text == "error_rate=0.333333"
    status, _, rule, text = judge("api", "Torch.add", False, False, "float32", arr(1.0, 2.0), arr(1.0, 2.0), None, 0.99, 0.001)
    assert (status, rule, text) == ("pass", "absolute threshold", "rel_err_ratio=0; abs_err_ratio=0")
    status, message, rule, _ = judge("api", "Torch.gelu", False, False, "float32", arr(1.0, 2.0), arr(1.0, 2.0), None, 0.99, 0.001)
    assert (status, rule) == ("pass", "benchmark")
    assert message == "no reference run in the tested dtype: ratios against the dtype's floor 6.10352e-05"


def test_the_rounding_bound_is_k_roundings_of_the_magnitude_plus_half_an_ulp():
    m = np.array([0.0, 1.0, 3.0, np.nan, np.inf, 2.0 ** -1070])
    # float16 computed in float32: eta is half float32's smallest subnormal (2^-150).
    f16 = _StdElementBound(m, 3.0, "float32", "float16")
    eta = 3 * 2.0 ** -150
    assert f16.bound[:4].tolist() == [eta + 2.0 ** -25, 3 * 2.0 ** -24 + eta + 2.0 ** -11, 9 * 2.0 ** -24 + eta + 2.0 ** -10,
                                      eta + 2.0 ** -25]
    assert f16.bound[4] == np.inf
    # float64: eta underflows to 0, and half an ulp of 0 is the smallest subnormal (2^-1075 does not exist).
    f64 = _StdElementBound(m, 16.0, "float64", "float64")
    assert f64.bound[0] == 2.0 ** -1074 and f64.bound[5] == 16 * (2.0 ** -53 * 2.0 ** -1070) + 2.0 ** -1074
    # bfloat16 computed in bfloat16 (u = 2^-8, eta = 2^-134).
    assert _StdElementBound(m, 4.0, "bfloat16", "bfloat16").bound[1] == 4 * (2.0 ** -8 + 2.0 ** -134) + 2.0 ** -8
    assert _StdElementBound(m, 1.0, "float32", "float32").bound[1] == 2.0 ** -24 + 2.0 ** -150 + 2.0 ** -24
    # float16 computed in float16: u = 2^-11, eta = 2^-25.
    assert _StdElementBound(m, 1.0, "float16", "float16").bound[0] == 2.0 ** -25 + 2.0 ** -25
    # Non-finite pairs have ratio 0.
    assert f16.ratios(np.array([np.nan, 1.0, 1.0, 1.0, 5.0, 0.0]), np.array([1.0, 1.0, 1.0, 1.0, 1.0, 0.0])).tolist() == [0.0] * 6
