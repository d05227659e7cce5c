"""The precision standards on small cases (runtime/tests/standard.rs holds
them to the shared cases; these pin the pieces)."""

import numpy as np

from msprobe_rs.repro.standard import _std_base_name, _std_rule, judge, metrics


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
    assert _std_rule("api", "Torch.add", False, False, "float32") == "absolute threshold"
    assert _std_rule("api", "Torch.matmul", False, False, "float16") == "ulp"
    assert _std_rule("api", "Torch.matmul", True, False, "float16") == "benchmark"
    assert _std_rule("api", "Functional.conv2d", False, False, "float32") == "thousandth"
    assert _std_rule("api", "Torch.add", False, False, "int64") == "binary equality"
    assert _std_rule("msprobe", "Torch.split", False, True, "float32") == "binary equality"
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
