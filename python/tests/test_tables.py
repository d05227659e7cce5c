"""The generated tables (rendered from the Rust tables) as the machinery uses them."""

import ast
import json
import os

from msprobe_rs.repro import _tables, ms_bench
from msprobe_rs.repro.data_generate import DTYPES, dtype_info


def test_every_spelling_maps_to_its_canonical_dtype():
    assert dtype_info("torch.float32") == ("float32", "float")
    assert dtype_info("torch.half") == ("float16", "float")
    assert dtype_info("BFloat16") == ("bfloat16", "float")
    assert dtype_info("Int32") == dtype_info("torch.int") == ("int32", "int")
    assert dtype_info("torch.cdouble") == ("complex128", "complex")
    assert len({canon for canon, _ in DTYPES.values()}) == 15
    assert _tables.MS_NAMES["bfloat16"] == "BFloat16" and _tables.MS_NAMES["uint64"] == "UInt64"
    assert _tables.INT_RANGES["int8"] == (-128, 127) and _tables.INT_RANGES["uint64"] == (0, 2**64 - 1)


def test_unknown_dtypes_are_refused():
    try:
        dtype_info("Int4")
    except ValueError as exc:
        assert str(exc) == "unsupported dtype 'Int4'"
    else:
        raise AssertionError("Int4 was accepted")


def test_keyword_aliases_and_exit_codes():
    assert _tables.KEYWORD_ALIASES == {"axis": "dim", "keep_dims": "keepdim", "input_x": "input", "x": "input"}
    assert (_tables.EXIT_OK, _tables.EXIT_INACCURATE, _tables.EXIT_INPUT, _tables.EXIT_INTERNAL, _tables.EXIT_SKIPPED) == (
        0, 3, 4, 6, 8)


def test_the_bench_helpers_the_table_names_are_the_ones_ms_bench_defines():
    with open(ms_bench.__file__, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    helpers = {n for n in defined if n.startswith(("ms_ops_", "ms_mint_", "ms_tensor_")) and n != "ms_tensor_variance"}
    assert set(_tables.MS_BENCH_HELPERS) == helpers


def test_the_standards_sets_and_numbers_are_the_rulebooks():
    sets = _tables.STANDARD_API_SETS
    assert sorted(sets) == ["absolute", "binary", "level1", "level2", "thousandth", "ulp"]
    assert "matmul" in sets["ulp"] and "add" in sets["absolute"] and sets["thousandth"] == frozenset(["conv1d", "conv2d"])
    rulebook_json = os.path.join(os.path.dirname(__file__), "..", "..", "runtime", "rulebook.json")
    with open(rulebook_json, encoding="utf-8") as f:
        book = json.load(f)
    assert {name: frozenset(book["api_standard"][name]) for name in sets} == sets

    def without_about(value):
        if isinstance(value, dict):
            return {k: without_about(v) for k, v in value.items() if k != "about"}
        return value

    book.pop("api_standard")
    assert _tables.RULEBOOK == without_about(book)


def test_every_rounding_class_is_one_magnitude_py_computes():
    from msprobe_rs.repro import magnitude
    assert sorted(_tables.ROUNDING_FACTORS) == ["batch_norm", "composite", "embedding", "flash_attention_score", "gelu", "layer_norm", "npu_fusion_attention", "sdpa", "selects", "sigmoid", "smooth",
                                                "softmax", "sums", "tanh", "terms"]
    for key, per_dtype in _tables.ROUNDING_FACTORS.items():
        assert sorted(per_dtype) == ["bfloat16", "float16", "float32", "float64"], key
    for name, entry in _tables.ROUNDING.items():
        assert entry[0] in ("terms", "sums", "selects", "smooth", "parts", "composite"), name
        if entry[0] == "parts":
            assert entry[1] in magnitude.PARTS and entry[1] in _tables.ROUNDING_FACTORS, name
        if entry[0] == "terms":
            assert (entry[1] is None) == (entry[2] is None), name
        if entry[0] == "sums":
            assert entry[2] is None or entry[2][0] in ("product", "linear", "conv"), name
    assert _tables.ROUNDING["Torch.sub"] == ("terms", 1, "other", ("input", "other", "alpha"))
    assert _tables.ROUNDING["MS.Functional.dense"] == ("sums", ("input", "weight", "bias"), ("linear",))
    assert "alpha" in _tables.ROUNDING_OPERANDS and "dim" not in _tables.ROUNDING_OPERANDS
    assert _tables.FLOAT_FORMATS["bfloat16"] == (7, -126)
