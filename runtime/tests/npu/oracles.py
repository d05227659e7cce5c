"""The NPU agreement cases: torch_npu's fused kernels (`NPU.` names of the
runtime's op table) on the same inputs through two independent oracles,
forward and backward, written to OUT_DIR in the format of
runtime/tests/agreement/reference.py (whose writer this reuses), which
runtime/tests/agreement.rs reads:

- `outputs` / `grads`: the torch compositions of compositions.py, in
  float64, gradients by autograd;
- `oracles`: [{"name": "msprobe 26.2.0", "outputs": [file | null],
  "grads": [file | null], "tolerance": float}]: msprobe 26.2.0's own CPU
  reference functions (msprobe/pytorch/bench_functions/, registered in its
  fusion_operator_config.yaml), imported from the installed wheel folder and
  run on the same inputs (null where msprobe has no function for that
  output or gradient).

msprobe 26.2.0 is found as msprobe26.py says ($MSPROBE_26 and
$MSPROBE_26_PT_EXTRA, default beside the test Python's environment).

Where msprobe's functions differ from torch_npu's documentation, the
difference is the reason the case gives msprobe no value (`None` below):
npu_rms_norm normalizes the last dim only, its gamma gradient is per element
(summed here to gamma's shape, as autograd gives it); npu_mish and the
rotary 'interleave' mode have no backward or no function; the attention's
TND layout is refused by msprobe; its scaled_masked_softmax with
fixed_triu_mask=True fails (it calls torch.triu(..., k=1), which torch does
not accept); its rotary r1/r2 gradients accumulate in
float32, and so do its rms_norm's rstd, its swiglu forward (silu in
float32 for any dtype but float32) and its scaled_masked_softmax's exp:
tolerance 1e-5 per element (float32 rounding of each element, accumulated) for
those cases.

Usage: oracles.py OUT_DIR
"""

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "agreement")]

import compositions as C  # noqa: E402
from cases import B, I, T, V, Given  # noqa: E402
from msprobe26 import bench, paths  # noqa: E402
from reference import SEED, CaseWriter, realize_call  # noqa: E402


sys.path[len(sys.path):] = paths()


# ------------------------------------------------------------ msprobe oracles
# Each takes (args, kwargs, outputs, grad_outputs) as torch values and
# returns (outputs, grads), lists aligned with the composition's, None where
# msprobe gives nothing; grad_outputs is None for forward-only use.


def ms_rms_norm(args, kwargs, outputs, gy):
    x, gamma = args
    eps = kwargs.get("epsilon", 1e-6)
    if gamma.dim() != 1:
        return [None, None], [None, None]
    y, rstd = bench("rms_norm").npu_rms_norm(x, gamma, eps)
    grads = [None, None]
    if gy is not None:
        dx, dgamma = bench("rms_norm").npu_rms_norm_backward(gy[0], x, gamma, rstd.double())
        grads = [dx, dgamma.reshape(-1, gamma.shape[-1]).sum(0)]
    return [y, rstd], grads


def ms_swiglu(args, kwargs, outputs, gy):
    x, = args
    dim = kwargs.get("dim", -1)
    m = bench("swiglu")
    return [m.npu_swiglu(x, dim)], [None if gy is None else m.npu_swiglu_backward(gy[0], x, dim)]


def ms_fast_gelu(args, kwargs, outputs, gy):
    x, = args
    m = bench("fast_gelu")
    return [m.npu_fast_gelu(x)], [None if gy is None else m.npu_fast_gelu_backward(gy[0], x)]


def ms_mish(args, kwargs, outputs, gy):
    return [bench("mish").npu_mish(args[0])], [None]


def ms_rotary_mul(args, kwargs, outputs, gy):
    x, r1, r2 = args
    if kwargs.get("rotary_mode", "half") != "half":
        return [None], [None, None, None]
    m = bench("rotary_mul")
    grads = [None, None, None]
    if gy is not None:
        grads = list(m.npu_rotary_mul_backward(gy[0], x.detach().clone(), r1.detach().clone(), r2.detach().clone()))
    return [m.npu_rotary_mul(x, r1, r2)], grads


def ms_scaled_masked_softmax(args, kwargs, outputs, gy):
    x, mask = args
    scale, triu = kwargs.get("scale", 1.0), kwargs.get("fixed_triu_mask", False)
    if triu:
        return [None], [None]
    m = bench("scaled_mask_softmax")
    y = m.npu_scaled_masked_softmax(x, mask, scale, triu)
    grad = None if gy is None else m.npu_scaled_masked_softmax_backward(gy[0], outputs[0].detach(), mask, scale, triu)
    return [y], [grad]


def ms_fusion_attention(args, kwargs, outputs, gy):
    if args[4] == "TND":
        return [None] * 3, [None] * 3
    m = bench("npu_fusion_attention")
    fwd = dict(kwargs)
    out, mx, sm = m.npu_fusion_attention(*args, **fwd)
    grads = [None] * 3
    if gy is not None:
        bwd = {k: v for k, v in kwargs.items() if k != "scale"}
        bwd["scale_value"] = kwargs["scale"]
        q, k, v, heads, layout = args
        grads = list(m.npu_fusion_attention_grad(q, k, v, gy[0], heads, layout, **bwd))
    return [out, mx, sm], grads


def ms_flash_attention_score(args, kwargs, outputs, gy):
    """msprobe 26.2.0's torch_npu reference of the operator (npu_fusion_attention) under
    flash_attention_score's names, attention_out and the gradients. Its MindSpore reference
    (api_accuracy_checker/bench_functions/flash_attention_score.py) fails on every call:
    it reads next_tokens under a key its own argument parsing never sets (None + int), and
    its backward reads the scale under another (scalar_value_value)."""
    names = {"real_shift": "pse", "attn_mask": "atten_mask", "scalar_value": "scale", "pre_tokens": "pre_tockens",
             "next_tokens": "next_tockens", "sparse_mode": "sparse_mode", "actual_seq_qlen": "actual_seq_qlen",
             "actual_seq_kvlen": "actual_seq_kvlen"}
    npu_kwargs = {names[k]: v for k, v in kwargs.items() if k in names}
    npu_kwargs.setdefault("scale", 1.0)
    q, k, v, heads = args
    out, grads = ms_fusion_attention([q, k, v, heads, kwargs.get("input_layout", "BSH")], npu_kwargs, outputs, gy)
    return out[:1], grads


# ------------------------------------------------------------------- cases


# The outputs torch_npu gives in a dtype of their own whatever the inputs' (float32
# statistics, npu_one_hot's float32, npu_anti_quant's float16 by default).
OUTPUT_DTYPES = {
    "NPU.npu_rms_norm": {1: "float32"},
    "NPU.npu_add_rms_norm": {1: "float32"},
    "NPU.npu_fusion_attention": {1: "float32", 2: "float32"},
    "NPU.npu_fusion_attention_v3": {1: "float32", 2: "float32"},
    "NPU.npu_fused_infer_attention_score": {1: "float32"},
    "NPU.npu_fused_add_topk_div": {0: "float32"},
    "NPU.npu_fused_infer_attention_score_v2": {1: "float32"},
    "MS.Functional.rms_norm": {1: "float32"},
    "NPU.npu_one_hot": {0: "float32"},
    "NPU.npu_anti_quant": {0: "float16"},
    "NPU.npu_dtype_cast": {0: "float32"},
    "NPU.npu_add_rms_norm_v2": {0: "float32"},
    "NPU.npu_sign_bits_unpack": {0: "float32"},
    "NPU.npu_moe_gating_top_k": {2: "float32"},
}


class NpuCase:
    """One call: the op-table name, arguments, the composition and msprobe's oracle."""

    def __init__(self, name, args, kwargs, composition, msprobe, tolerance=1e-9, constants=(), undefined=False):
        self.name, self.args, self.kwargs = name, args, kwargs
        self.composition, self.msprobe, self.tolerance = composition, msprobe, tolerance
        self.constants = set(constants)
        # Uninitialized memory (empty_with_format): only shapes and dtypes compare.
        self.undefined = undefined


CASES = []


def case(name, *args, composition, msprobe=None, tolerance=1e-9, constants=(), undefined=False, **kwargs):
    """A case checked against `composition` and, where given, msprobe's own reference."""
    CASES.append(NpuCase(name, args, kwargs, composition, msprobe, tolerance, constants, undefined))


def causal_mask(s1, s2):
    """A bool mask (true = not attended) that leaves the diagonal attended."""
    return Given(np.triu(np.ones((s1, s2), dtype=bool), 1).tolist(), "bool")


rms = dict(composition=C.npu_rms_norm, msprobe=ms_rms_norm, tolerance=1e-5)
case("NPU.npu_rms_norm", T(2, 3, 8), T(8), **rms)
case("NPU.npu_rms_norm", T(2, 3, 8), T(8), epsilon=1e-3, **rms)
case("NPU.npu_rms_norm", T(2, 4, 6), T(4, 6), **rms)
case("NPU.npu_swiglu", T(2, 3, 8), composition=C.npu_swiglu, msprobe=ms_swiglu, tolerance=1e-5)
case("NPU.npu_swiglu", T(4, 6, 3), dim=0, composition=C.npu_swiglu, msprobe=ms_swiglu, tolerance=1e-5)
for name in ["NPU.npu_fast_gelu", "NPU.fast_gelu"]:
    case(name, T(4, 5, low=-6.0, high=6.0), composition=C.npu_fast_gelu, msprobe=ms_fast_gelu)
case("NPU.npu_mish", T(4, 5, low=-8.0, high=8.0), composition=C.npu_mish, msprobe=ms_mish)
case("NPU.npu_rotary_mul", T(2, 3, 4, 8), T(1, 3, 1, 8), T(1, 3, 1, 8), composition=C.npu_rotary_mul, msprobe=ms_rotary_mul, tolerance=1e-5)
case("NPU.npu_rotary_mul", T(2, 3, 4, 8), T(1, 1, 4, 8), T(1, 1, 4, 8), composition=C.npu_rotary_mul, msprobe=ms_rotary_mul, tolerance=1e-5)
case("NPU.npu_rotary_mul", T(2, 3, 4, 8), T(1, 3, 1, 8), T(1, 3, 1, 8), rotary_mode="interleave", composition=C.npu_rotary_mul, msprobe=ms_rotary_mul)
case("NPU.npu_scaled_masked_softmax", T(2, 2, 4, 6), B(2, 1, 4, 6), scale=0.5, tolerance=1e-5, composition=C.npu_scaled_masked_softmax, msprobe=ms_scaled_masked_softmax)
case("NPU.npu_scaled_masked_softmax", T(1, 2, 5, 5), B(1, 2, 5, 5), fixed_triu_mask=True, composition=C.npu_scaled_masked_softmax, msprobe=ms_scaled_masked_softmax)

FA = "NPU.npu_fusion_attention"
fa = dict(composition=C.npu_fusion_attention, msprobe=ms_fusion_attention)
# Layouts (B=2, N=2, S=4, D=8), no mask.
case(FA, T(2, 4, 16), T(2, 4, 16), T(2, 4, 16), 2, "BSH", scale=0.35, **fa)
case(FA, T(4, 2, 16), T(4, 2, 16), T(4, 2, 16), 2, "SBH", scale=0.35, **fa)
case(FA, T(2, 4, 2, 8), T(2, 4, 2, 8), T(2, 4, 2, 8), 2, "BSND", scale=0.35, **fa)
case(FA, T(2, 2, 4, 8), T(2, 2, 4, 8), T(2, 2, 4, 8), 2, "BNSD", scale=0.35, **fa)
# Grouped-query heads (4 query heads over 2), keys longer than queries.
case(FA, T(2, 3, 32), T(2, 5, 16), T(2, 5, 16), 4, "BSH", scale=0.25, **fa)
# A given mask (sparse_mode 0 and 1), pse.
case(FA, T(2, 2, 4, 8), T(2, 2, 4, 8), T(2, 2, 4, 8), 2, "BNSD", scale=0.35, atten_mask=causal_mask(4, 4), **fa)
case(FA, T(2, 4, 16), T(2, 4, 16), T(2, 4, 16), 2, "BSH", scale=0.35, atten_mask=causal_mask(4, 4), sparse_mode=1, **fa)
case(FA, T(2, 2, 4, 8), T(2, 2, 4, 8), T(2, 2, 4, 8), 2, "BNSD", scale=0.35, pse=T(1, 2, 4, 4), constants=["pse"], **fa)
# Megatron's causal call: sparse_mode 0, a causal mask, next_tockens 0, pre_tockens past the
# sequence (the band masks what the mask does: msprobe's reference, the mask alone, agrees).
case(FA, T(4, 1, 16), T(4, 1, 16), T(4, 1, 16), 2, "SBH", scale=0.35, atten_mask=causal_mask(4, 4), pre_tockens=65536,
     next_tockens=0, **fa)
# A band inside a given mask (torch_npu's documentation: both apply; msprobe's reference
# ignores the band), and the band without a mask (the documentation: ignored).
case(FA, T(2, 2, 5, 8), T(2, 2, 5, 8), T(2, 2, 5, 8), 2, "BNSD", scale=0.35, atten_mask=causal_mask(5, 5), pre_tockens=1,
     next_tockens=0, composition=C.npu_fusion_attention)
case(FA, T(2, 2, 4, 8), T(2, 2, 4, 8), T(2, 2, 4, 8), 2, "BNSD", scale=0.35, next_tockens=0,
     composition=C.npu_fusion_attention)
# Generated masks: causal from the top left (2), the bottom right (3), a band (4).
case(FA, T(2, 4, 2, 8), T(2, 4, 2, 8), T(2, 4, 2, 8), 2, "BSND", scale=0.35, sparse_mode=2, **fa)
case(FA, T(2, 3, 16), T(2, 5, 16), T(2, 5, 16), 2, "BSH", scale=0.35, sparse_mode=3, **fa)
case(FA, T(5, 2, 16), T(5, 2, 16), T(5, 2, 16), 2, "SBH", scale=0.35, sparse_mode=4, pre_tockens=1, next_tockens=0, **fa)
# TND: two sequences of 3 and 2 queries over 4 and 2 keys, causal from the bottom right.
case(FA, T(5, 2, 8), T(6, 2, 8), T(6, 2, 8), 2, "TND", scale=0.35, actual_seq_qlen=[3, 5], actual_seq_kvlen=[4, 6], sparse_mode=3, **fa)


# MindSpore's fused ops: the same operators under MindSpore's names and signatures, against
# the same compositions (and msprobe 26.2.0's torch_npu references of the operator, or its
# MindSpore one for flash_attention_score).
case("MS.Functional.rms_norm", T(2, 3, 8), T(8), **rms)
case("MS.Functional.rms_norm", T(2, 4, 6), T(4, 6), epsilon=1e-3, **rms)
case("MS.Functional.swiglu", T(2, 3, 8), composition=C.npu_swiglu, msprobe=ms_swiglu, tolerance=1e-5)
case("MS.Functional.swiglu", T(4, 6, 3), dim=0, composition=C.npu_swiglu, msprobe=ms_swiglu, tolerance=1e-5)
case("MS.Functional.fast_gelu", T(4, 5, low=-6.0, high=6.0), composition=C.npu_fast_gelu, msprobe=ms_fast_gelu)
RPE = "MS.Functional.rotary_position_embedding"
case(RPE, T(2, 3, 4, 8), T(1, 3, 1, 8), T(1, 3, 1, 8), composition=C.ms_rotary_position_embedding)
case(RPE, T(2, 3, 4, 8), T(1, 1, 4, 8), T(1, 1, 4, 8), mode=1, composition=C.ms_rotary_position_embedding)
FAS = "MS.Functional.flash_attention_score"
fas = dict(composition=C.ms_flash_attention_score, msprobe=ms_flash_attention_score, tolerance=1e-9)
case(FAS, T(2, 4, 16), T(2, 4, 16), T(2, 4, 16), 2, scalar_value=0.35, **fas)
case(FAS, T(4, 2, 16), T(4, 2, 16), T(4, 2, 16), 2, scalar_value=0.35, input_layout="SBH", **fas)
case(FAS, T(2, 2, 4, 8), T(2, 2, 4, 8), T(2, 2, 4, 8), 2, scalar_value=0.35, input_layout="BNSD",
     attn_mask=Given(np.triu(np.ones((4, 4), dtype=np.uint8), 1).tolist(), "uint8"), **fas)
case(FAS, T(2, 4, 2, 8), T(2, 4, 2, 8), T(2, 4, 2, 8), 2, scalar_value=0.35, input_layout="BSND", sparse_mode=2, **fas)
# The PanGu call's settings: SBH, a causal UInt8 mask, next_tokens 0, pre_tokens past the sequence.
case(FAS, T(4, 1, 16), T(4, 1, 16), T(4, 1, 16), 2, scalar_value=0.35, input_layout="SBH",
     attn_mask=Given(np.triu(np.ones((4, 4), dtype=np.uint8), 1).tolist(), "uint8"), pre_tokens=65536, next_tokens=0, **fas)
case(FAS, T(2, 2, 4, 8), T(2, 2, 4, 8), T(2, 2, 4, 8), 2, scalar_value=0.35, input_layout="BNSD", real_shift=T(1, 2, 4, 4),
     constants=["real_shift"], **fas)
case(FAS, T(5, 2, 8), T(6, 2, 8), T(6, 2, 8), 2, scalar_value=0.35, input_layout="TND", actual_seq_qlen=[3, 5],
     actual_seq_kvlen=[4, 6], sparse_mode=3, **fas)



# torch_npu's spellings of the table's functions (ops/npu_torch.rs), against compositions of
# torch_npu's documented formulas (compositions.py).
case("NPU.npu_conv2d", T(2, 3, 6, 6), T(4, 3, 3, 3), T(4), [1, 1], [1, 1], [1, 1], 1, composition=C.npu_conv2d)
case("NPU.npu_conv3d", T(1, 2, 4, 4, 4), T(3, 2, 2, 2, 2), None, [1, 1, 1], [0, 0, 0], [1, 1, 1], 1, composition=C.npu_conv3d)
case("NPU.npu_convolution", T(2, 4, 5, 5), T(4, 2, 3, 3), T(4), [2, 2], [1, 0], [1, 1], 2, composition=C.npu_convolution)
case("NPU.npu_convolution", T(1, 2, 4, 4, 3), T(2, 2, 2, 2, 2), None, [1, 1, 1], [1, 0, 1], [1, 1, 1], 1, composition=C.npu_convolution)
case("NPU.npu_conv_transpose2d", T(2, 3, 4, 4), T(3, 2, 3, 3), T(2), [1, 1], [1, 0], [2, 2], [1, 1], 1, composition=C.npu_conv_transpose2d)
case("NPU.npu_convolution_transpose", T(1, 2, 3, 3, 3), T(2, 2, 2, 2, 2), None, [0, 0, 0], [0, 0, 0], [1, 1, 1], [1, 1, 1], 1, composition=C.npu_conv_transpose2d)
case("NPU.npu_silu", T(3, 4), composition=C.npu_silu)
case("NPU.npu_gelu", T(3, 4), composition=C.npu_gelu)
case("NPU.npu_gelu", T(3, 4), approximate="tanh", composition=C.npu_gelu)
case("NPU.npu_broadcast", T(3, 1), [2, 3, 4], composition=C.npu_broadcast)
case("NPU.npu_dtype_cast", T(3, 4), torch.float32, composition=C.npu_dtype_cast)
case("NPU.npu_transpose", T(2, 3, 4), [2, 0, 1], composition=C.npu_transpose)
case("NPU.npu_reshape", T(2, 3, 4), [4, 6], composition=C.npu_reshape)
case("NPU.npu_bmmV2", T(2, 3, 4), T(2, 4, 5), [], composition=C.npu_bmmV2)
case("NPU.npu_format_cast", T(2, 3), 29, composition=C.npu_format_cast)
case("NPU.npu_format_cast_", T(2, 3), 2, composition=C.npu_format_cast)
case("NPU.one_", T(2, 3), composition=C.one_, constants=[0])
case("NPU.empty_with_format", [2, 3], dtype=torch.float32, composition=C.empty_with_format, undefined=True)
case("NPU.npu_slice", T(4, 5), [1, 2], [2, 3], composition=C.npu_slice)
case("NPU.npu_indexing", T(4, 6), [0, 1], [4, 6], [2, 2], composition=C.npu_indexing)
case("NPU.npu_indexing", T(4, 6), [1, 1], [3, 5], [1, 3], begin_mask=1, end_mask=2, composition=C.npu_indexing)
for _name in ["NPU.npu_scatter_nd_update", "NPU.npu_scatter_nd_update_"]:
    case(_name, T(4, 3), V([[2], [0]], "int64"), T(2, 3), composition=C.npu_scatter_nd_update, constants=[0, 2])
case("NPU.npu_scatter_nd_update", T(3, 4), V([[0, 1], [2, 3]], "int32"), T(2), composition=C.npu_scatter_nd_update, constants=[0, 2])
case("NPU.npu_add_rms_norm", T(2, 3, 8), T(2, 3, 8), T(8, low=0.5, high=1.5), composition=C.npu_add_rms_norm, tolerance=1e-5)
case("NPU.npu_add_rms_norm", T(2, 4, 6), T(2, 4, 6), T(4, 6), epsilon=1e-3, composition=C.npu_add_rms_norm, tolerance=1e-5)
case("NPU.npu_max", T(3, 5), 1, composition=C.npu_max)
case("NPU.npu_max", T(3, 5), 0, True, composition=C.npu_max)
case("NPU.npu_min", T(3, 5), -1, composition=C.npu_min)
case("NPU.npu_one_hot", V([0, 3, 1, 7, -1], "int32"), depth=5, composition=C.npu_one_hot)
case("NPU.npu_one_hot", V([[2, 0], [1, 1]], "int32"), -1, 3, 2.5, -1.0, composition=C.npu_one_hot)
case("NPU.npu_softmax_cross_entropy_with_logits", T(4, 6), T(4, 6, low=0.0, high=1.0), composition=C.npu_softmax_cross_entropy_with_logits)
case("NPU.npu_pad", T(2, 3), [1, 0, 2, 1], composition=C.npu_pad)
case("NPU.npu_pad", T(2, 3, 2), [0, 1, 0, 0, 2, 2], composition=C.npu_pad)
case("NPU.npu_geglu", T(2, 3, 8), composition=C.npu_geglu)
case("NPU.npu_geglu", T(4, 6), 0, 0, True, composition=C.npu_geglu)
case("NPU.npu_anti_quant", I(3, 4, low=-128, high=128, dtype="int8"), T(4, low=0.1, high=2.0), composition=C.npu_anti_quant, constants=[1])
case("NPU.npu_anti_quant", I(3, 4, low=-128, high=128, dtype="int8"), T(4, low=0.1, high=2.0), offset=T(4), composition=C.npu_anti_quant, constants=[1, "offset"])
for _name in ["NPU.scatter_update", "NPU.scatter_update_"]:
    case(_name, T(2, 6, 3), V([1, 3], "int64"), T(2, 2, 3), 1, composition=C.scatter_update, constants=[0, 2])
case("NPU.scatter_update", T(3, 2, 5, 4), V([[2, 0], [0, 3]], "int64"), T(2, 2, 2, 4), -2, composition=C.scatter_update, constants=[0, 2])
_ROIS = V([[1, 2, 3, 4], [3, 4, 5, 6], [0, 1, 8, 5]])
case("NPU.npu_bounding_box_encode", _ROIS, V([[5, 6, 7, 8], [7, 8, 9, 7], [1, 0, 6, 6]]), 0.0, 0.0, 0.0, 0.0, 0.1, 0.1, 0.2, 0.2,
     composition=C.npu_bounding_box_encode, constants=[0, 1])
case("NPU.npu_bounding_box_decode", _ROIS, T(3, 4, low=-1.0, high=1.0), 0.0, 0.1, 0.0, -0.1, 1.0, 1.0, 0.5, 0.5, [10, 8], 0.1,
     composition=C.npu_bounding_box_decode, constants=[0, 1])
case("NPU.npu_bounding_box_decode", _ROIS, T(3, 4, low=-5.0, high=5.0), 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, [6, 9], 0.016,
     composition=C.npu_bounding_box_decode, constants=[0, 1])

# torch_npu's MoE kernels (ops/npu_moe.rs), against op-plugin's goldens written out in torch.
_ROW_IDX = V([[0, 3], [1, 4], [2, 5]], "int32")  # torch_npu's canonical row_idx: k·rows + i
case("NPU.npu_moe_init_routing", T(3, 4), _ROW_IDX, V([[1, 2], [0, 1], [0, 2]], "int32"), 3, composition=C.npu_moe_init_routing, constants=[0])
case("NPU.npu_moe_init_routing", T(4, 2), V([[0, 4], [1, 5], [2, 6], [3, 7]], "int32"), V([[2, 2], [0, 3], [1, 0], [3, 1]], "int32"), 2,
     composition=C.npu_moe_init_routing, constants=[0])
_V2 = dict(composition=C.npu_moe_init_routing_v2, constants=[0, "scale"])
case("NPU.npu_moe_init_routing_v2", T(4, 3), V([[2, 0], [1, 2], [0, 2], [3, 1]], "int32"), scale=V([0.5, 1.25, 2.0, 0.75], "float32"), expert_num=4,
     expert_tokens_num_flag=True, **_V2)
case("NPU.npu_moe_init_routing_v2", T(4, 3), V([[2, 0], [1, 2], [0, 2], [3, 1]], "int32"), active_num=5, expert_num=4, expert_tokens_num_type=1,
     expert_tokens_num_flag=True, row_idx_type=1, **_V2)
# Experts outside [1, 3) are dropped: rows past the active ones are unspecified (None), gather indices -1.
case("NPU.npu_moe_init_routing_v2", T(3, 2), V([[0, 1], [2, 1], [3, 0]], "int32"), expert_num=4, active_expert_range=[1, 3], **_V2)
case("NPU.npu_moe_init_routing_v2", T(3, 2), V([[0, 1], [2, 1], [3, 0]], "int32"), active_num=2, expert_num=4, active_expert_range=[1, 3],
     expert_tokens_num_flag=True, **_V2)
case("NPU.npu_moe_compute_expert_tokens", V([0, 0, 1, 3, 3, 3], "int32"), 5, composition=C.npu_moe_compute_expert_tokens)
_FIN = dict(composition=C.npu_moe_finalize_routing, constants=[0, 1, 2, 3, 4])
case("NPU.npu_moe_finalize_routing", T(6, 4), T(3, 4), T(3, 4), T(5, 4), T(3, 2), V([2, 0, 5, 1, 4, 3], "int32"),
     V([[1, 4], [0, 2], [3, 3]], "int32"), **_FIN)
case("NPU.npu_moe_finalize_routing", T(8, 3), T(4, 3), None, T(3, 3), T(4, 2), V([7, 0, 2, 5, 1, 6, 3, 4], "int32"),
     V([[0, 1], [2, 2], [1, 0], [0, 2]], "int32"), 1, **_FIN)
# Indices by row (npu_moe_init_routing_v2's layout): src_to_dst[i*K + k].
case("NPU.npu_moe_finalize_routing", T(6, 4), T(3, 4), None, T(5, 4), T(3, 2), V([2, 0, 5, 1, 4, 3], "int32"),
     V([[1, 4], [0, 2], [3, 3]], "int32"), 2, **_FIN)
GMM = "NPU.npu_grouped_matmul"
case(GMM, [T(3, 4), T(2, 4)], [T(4, 5), T(4, 5)], bias=[T(5), T(5)], composition=C.npu_grouped_matmul)
case(GMM, [T(6, 4)], [T(4, 3), T(4, 3), T(4, 3)], group_list=[2, 3, 6], split_item=3, group_type=0, composition=C.npu_grouped_matmul)
case(GMM, [T(5, 4)], [T(2, 4, 3)], group_list=V([2, 3], "int64"), split_item=3, group_type=0, group_list_type=1, composition=C.npu_grouped_matmul)
case(GMM, [T(5, 4)], [T(4, 2), T(4, 2)], group_list=V([1, 5], "int64"), split_item=1, group_type=0, composition=C.npu_grouped_matmul)

# More inference kernels (ops/npu_infer.rs), forward only.
case("NPU.npu_add_rms_norm_v2", T(2, 3, 8), T(2, 3, 8), T(8, low=0.5, high=1.5), composition=C.npu_add_rms_norm_v2, constants=[0, 1, 2], tolerance=1e-5)
case("NPU.npu_apply_rotary_pos_emb", T(2, 3, 4, 8), T(2, 3, 2, 8), T(2, 3, 1, 8), T(2, 3, 1, 8), composition=C.npu_apply_rotary_pos_emb, constants=[0, 1, 2, 3])
case("NPU.npu_apply_rotary_pos_emb", T(5, 4, 8), T(5, 4, 8), T(5, 1, 8), T(5, 1, 8), "TND", "interleave", composition=C.npu_apply_rotary_pos_emb,
     constants=[0, 1, 2, 3])
case("NPU.npu_transpose_batchmatmul", T(3, 2, 4), T(3, 4, 5), composition=C.npu_transpose_batchmatmul, constants=[0, 1])
case("NPU.npu_transpose_batchmatmul", T(2, 3, 4), T(3, 4, 6), perm_x1=[1, 0, 2], batch_split_factor=3, composition=C.npu_transpose_batchmatmul,
     constants=[0, 1])
for _op in ["", "add", "mul", "gelu_erf", "gelu_tanh", "relu"]:
    case("NPU.npu_fused_matmul", T(2, 3, 4), T(4, 5), bias=T(5), x3=T(2, 3, 5), fused_op_type=_op, composition=C.npu_fused_matmul,
         constants=[0, 1, "bias", "x3"])
case("NPU.npu_attention_update", [T(6), T(6), T(6)], [T(6, 4), T(6, 4), T(6, 4)], 1, composition=C.npu_attention_update, constants=[0, 1])
case("NPU.npu_grouped_matmul_add_", T(3, 4, 5), T(7, 4), T(7, 5), V([2, 5, 7], "int64"), composition=C.npu_grouped_matmul_add_, constants=[0, 1, 2])
case("NPU.npu_grouped_matmul_add_", T(8, 5), T(6, 4), T(6, 5), V([4, 2], "int64"), group_list_type=1, composition=C.npu_grouped_matmul_add_,
     constants=[0, 1, 2])
case("NPU.npu_sign_bits_pack", V([5.0, 4, 3, 2, 0, -1, -2, 4, 3, 2, 1, 0, -1, -2]), 2, composition=C.npu_sign_bits_pack)
case("NPU.npu_sign_bits_unpack", V([159, 15, 0, 255], "uint8"), 2, torch.float32, composition=C.npu_sign_bits_unpack)
case("NPU.npu_masked_fill_range", T(3, 2, 6), V([[0, 2, 1], [3, 4, 0]], "int32"), V([[2, 5, 6], [6, 6, 3]], "int32"), V([9.0, -9.0]), composition=C.npu_masked_fill_range,
     constants=[0, 3])
case("NPU.npu_moe_gating_top_k", T(4, 8), 2, norm_type=1, composition=C.npu_moe_gating_top_k, constants=[0])
case("NPU.npu_moe_gating_top_k", T(4, 8), 3, bias=T(8, low=-0.1, high=0.1), k_group=2, group_count=4, group_select_mode=1, routed_scaling_factor=2.5,
     composition=C.npu_moe_gating_top_k, constants=[0, "bias"])

# The flash-attention inference kernels, unquantized: npu_fusion_attention's attention_out.
case("NPU.npu_prompt_flash_attention", T(2, 4, 16), T(2, 4, 16), T(2, 4, 16), num_heads=2, scale_value=0.35, composition=C.npu_prompt_flash_attention,
     constants=[0, 1, 2])
case("NPU.npu_prompt_flash_attention", T(2, 2, 4, 8), T(2, 2, 4, 8), T(2, 2, 4, 8), num_heads=2, scale_value=0.35, input_layout="BNSD",
     atten_mask=causal_mask(4, 4), composition=C.npu_prompt_flash_attention, constants=[0, 1, 2])
case("NPU.npu_incre_flash_attention", T(2, 1, 32), T(2, 5, 16), T(2, 5, 16), num_heads=4, scale_value=0.25, num_key_value_heads=2,
     composition=C.npu_incre_flash_attention, constants=[0, 1, 2])

case("NPU.npu_fused_infer_attention_score", T(2, 4, 16), T(2, 4, 16), T(2, 4, 16), num_heads=2, scale=0.35, softmax_lse_flag=True,
     composition=C.npu_fused_infer_attention_score, constants=[0, 1, 2])
case("NPU.npu_fused_infer_attention_score", T(2, 2, 4, 8), T(2, 1, 5, 8), T(2, 1, 5, 8), num_heads=2, scale=0.35, input_layout="BNSD",
     num_key_value_heads=1, atten_mask=causal_mask(4, 5), composition=C.npu_fused_infer_attention_score, constants=[0, 1, 2])
# Decoding (one query token): sparse mode and tokens ignored, a [B, KV_S] mask per batch.
case("NPU.npu_fused_infer_attention_score", T(2, 1, 16), T(2, 5, 16), T(2, 5, 16), num_heads=2, scale=0.35, sparse_mode=2, next_tokens=0,
     atten_mask=V([[False, False, True, False, True], [False, True, False, False, False]], "bool"), composition=C.npu_fused_infer_attention_score,
     constants=[0, 1, 2])
case("NPU.npu_fused_infer_attention_score_v2", T(2, 1, 32), T(2, 5, 16), T(2, 5, 16), num_query_heads=4, num_key_value_heads=2, softmax_scale=0.25,
     return_softmax_lse=True, composition=C.npu_fused_infer_attention_score_v2, constants=[0, 1, 2])
# npu_fusion_attention for graph mode: its sequence lengths as tensors (TND), differentiated like it.
case("NPU.npu_fusion_attention_v3", T(5, 2, 4), T(6, 2, 4), T(6, 2, 4), 2, "TND", scale=0.5, actual_seq_qlen=V([2, 5], "int64"),
     actual_seq_kvlen=V([3, 6], "int64"), sparse_mode=3, composition=C.npu_fusion_attention_v3)
case("NPU.npu_fusion_attention_v3", T(2, 3, 8), T(2, 3, 8), T(2, 3, 8), 2, "BSH", scale=0.4, composition=C.npu_fusion_attention_v3)


# Token routing (ops/npu_route.rs).
_EXPERTS = V([[1, 0], [2, 1], [0, 2], [1, 1], [2, 0]], "int64")
case("NPU.npu_moe_token_permute", T(5, 3), _EXPERTS, composition=C.npu_moe_token_permute, constants=[1])
case("NPU.npu_moe_token_permute", T(5, 3), _EXPERTS, 7, composition=C.npu_moe_token_permute, constants=[1])
case("NPU.npu_moe_token_permute", T(4, 2), V([3, 0, 3, 1], "int32"), -1, composition=C.npu_moe_token_permute, constants=[1])
_SORTED = V([3, 0, 7, 4, 1, 8, 5, 6, 9, 2], "int32")
case("NPU.npu_moe_token_unpermute", T(10, 3), _SORTED, T(5, 2), composition=C.npu_moe_token_unpermute, constants=[1])
# Three rows were dropped (indices 7, 8, 9 are past the rows): they add nothing.
case("NPU.npu_moe_token_unpermute", T(7, 3), _SORTED, T(5, 2), composition=C.npu_moe_token_unpermute, constants=[1])
case("NPU.npu_moe_token_unpermute", T(4, 3), V([2, 0, 3, 1], "int32"), composition=C.npu_moe_token_unpermute, constants=[1])
_MAP = V([[1, 0, 1], [0, 1, 1], [1, 1, 0], [1, 0, 1]], "bool")
case("NPU.npu_moe_token_permute_with_routing_map", T(4, 3), _MAP, probs=T(4, 3), num_out_tokens=8, composition=C.npu_moe_token_permute_with_routing_map,
     constants=[1])
case("NPU.npu_moe_re_routing", T(7, 3), V([[1, 2], [3, 1]], "int32"), per_token_scales=V([0.5, 1, 2, 3, 4, 5, 6], "float32"),
     composition=C.npu_moe_re_routing, constants=[0, 1, "per_token_scales"])
case("NPU.npu_gather_sparse_index", T(5, 3), V([[0, 4], [2, 2]], "int64"), composition=C.npu_gather_sparse_index, constants=[1])


# Logits and expert scores (ops/npu_logits.rs).
case("NPU.npu_top_k_top_p", T(3, 8), p=V([0.5, 0.9, 0.2]), k=V([3, 0, 8], "int32"), composition=C.npu_top_k_top_p, constants=[0, "p"])
case("NPU.npu_top_k_top_p", V([[1.0, 2, 2, 0, 3], [0, 0, 1, 1, 1]]), k=V([2, 4], "int64"), composition=C.npu_top_k_top_p, constants=[0])
case("NPU.npu_top_k_top_p", T(2, 6), p=V([0.7, 0.3]), composition=C.npu_top_k_top_p, constants=[0, "p"])
_CE = dict(composition=C.npu_cross_entropy_loss, constants=[1, 2])
case("NPU.npu_cross_entropy_loss", T(5, 4), V([0, 3, 1, 1, 2], "int64"), **_CE)
case("NPU.npu_cross_entropy_loss", T(5, 4), V([0, 3, 1, 1, 2], "int64"), T(4, low=0.5, high=2.0), "sum", 3, 0.1, **_CE)
case("NPU.npu_cross_entropy_loss", T(5, 4), V([0, 3, 1, 1, 2], "int64"), None, "none", label_smoothing=0.2, **_CE)
case("NPU.npu_fused_add_topk_div", T(3, 16), T(16, low=-0.1, high=0.1), group_num=4, group_topk=2, n=2, k=4, composition=C.npu_fused_add_topk_div,
     constants=[0, 1])
case("NPU.npu_fused_add_topk_div", T(2, 8), T(8), group_num=2, group_topk=1, k=3, is_norm=False, composition=C.npu_fused_add_topk_div, constants=[0, 1])


# Rotary, activation, normalization and layout kernels (ops/npu_act.rs); all but npu_group_norm_swish forward only.
case("NPU.npu_interleave_rope", T(2, 2, 3, 8), T(2, 1, 3, 8), T(2, 1, 3, 8), composition=C.npu_interleave_rope, constants=[0, 1, 2])
_POS = V([0, 3, 5, 2], "int64")
case("NPU.npu_mrope", _POS, T(4, 16), T(4, 8), T(6, 8), 8, composition=C.npu_mrope, constants=[1, 2, 3])
case("NPU.npu_mrope", _POS, T(4, 16), T(4, 8), T(6, 4), 8, rotary_mode="interleave", composition=C.npu_mrope, constants=[1, 2, 3])
_POS3 = V([[0, 1, 2, 3], [3, 2, 1, 0], [5, 5, 4, 4]], "int64")
case("NPU.npu_mrope", _POS3, T(4, 16), T(4, 8), T(6, 8), 8, mrope_section=[1, 1, 2], composition=C.npu_mrope, constants=[1, 2, 3])
case("NPU.npu_mrope", _POS3, T(4, 16), T(4, 8), T(6, 8), 8, mrope_section=[2, 1, 1], cache_mode="interleave", composition=C.npu_mrope,
     constants=[1, 2, 3])
case("NPU.npu_gelu_mul", T(3, 8), composition=C.npu_gelu_mul, constants=[0])
case("NPU.npu_gelu_mul", T(2, 3, 6), approximate="tanh", composition=C.npu_gelu_mul, constants=[0])
case("NPU.npu_clipped_swiglu", T(3, 8, low=-9.0, high=9.0), composition=C.npu_clipped_swiglu, constants=[0])
case("NPU.npu_clipped_swiglu", T(2, 4, 3, low=-9.0, high=9.0), dim=1, interleaved=False, alpha=1.5, limit=5.0, bias=0.5,
     composition=C.npu_clipped_swiglu, constants=[0])
case("NPU.npu_clipped_swiglu", T(3, 8), group_index=V([1, 2], "int64"), composition=C.npu_clipped_swiglu, constants=[0])
case("NPU.npu_group_norm_swish", T(2, 4, 3), 2, T(4), T(4), swish_scale=1.5, composition=C.npu_group_norm_swish)
case("NPU.npu_group_norm_swish", T(3, 6, 2, 2), 3, T(6), T(6), eps=1e-3, composition=C.npu_group_norm_swish)
case("NPU.npu_normalize_batch", T(2, 3, 5), V([5, 3], "int32"), composition=C.npu_normalize_batch, constants=[0])
case("NPU.npu_normalize_batch", T(2, 3, 5), V([4, 2], "int32"), 1, composition=C.npu_normalize_batch, constants=[0])
case("NPU.npu_stride_add", T(1, 3, 2, 2), T(1, 20, 2, 2), 0, 1, 1, composition=C.npu_stride_add, constants=[0, 1])
_FFN = dict(composition=C.npu_ffn, constants=[0, 1, 2, "bias1", "bias2"])
case("NPU.npu_ffn", T(5, 4), T(4, 6), T(6, 4), "relu", bias1=T(6), bias2=T(4), **_FFN)
case("NPU.npu_ffn", T(5, 4), T(2, 4, 6), T(2, 6, 4), "gelu", expert_tokens=[2, 3], bias1=T(2, 6), **_FFN)
case("NPU.npu_ffn", T(1, 5, 4), T(2, 4, 6), T(2, 6, 3), "fastgelu", expert_tokens_index=[2, 5], **_FFN)
case("NPU.npu_ffn", T(5, 4), T(4, 6), T(6, 4), "silu", **_FFN)
case("NPU.npu_scatter", T(2, 3, 4), V([[2, 0, 1, 1], [0, 2, 2, 1]], "int32"), T(2, 4), 1, composition=C.npu_scatter, constants=[0, 2])
case("NPU.npu_convert_weight_to_int4pack", V([[-8, -1, 0, 1, 7, 3, -4, 2, 5, 6, -7, -2, 4, 0, 1, -3], [7] * 8 + [-8] * 8], "int32"),
     composition=C.npu_convert_weight_to_int4pack)


# Detection kernels (ops/npu_boxes.rs): boxes [4, N], (x1, y1, x2, y2) rows, or (cx, cy, w, h) with trans.
_XYXY = V([[0.0, 1, 2, 0.5, 1], [0, 0.5, 1, 2, 0], [2, 3, 4, 3, 2.5], [1.5, 2, 3, 4, 3]])
_GT = V([[0.5, 0, 2.5, 1, 0.8], [0.2, 1, 0, 2.5, 0.1], [2.2, 2, 3.5, 3.5, 2], [1, 2.5, 2.5, 3, 3.3]])
case("NPU.npu_giou", T(4, 5, low=0.5, high=3.0), T(4, 5, low=0.5, high=3.0), True, composition=C.npu_giou)
case("NPU.npu_diou", _XYXY, _GT, composition=C.npu_diou)
case("NPU.npu_diou", T(4, 5, low=0.5, high=3.0), T(4, 5, low=0.5, high=3.0), True, composition=C.npu_diou)
case("NPU.npu_diou", T(4, 3, low=0.5, high=3.0), T(4, 2, low=0.5, high=3.0), True, True, composition=C.npu_diou)
case("NPU.npu_ciou", _XYXY, _GT, is_cross=False, composition=C.npu_ciou, constants=[0, 1])
case("NPU.npu_ciou", T(4, 3, low=0.5, high=3.0), T(4, 2, low=0.5, high=3.0), True, composition=C.npu_ciou, constants=[0, 1])
_ANCHORS = V([[0.0, 0, 4, 3], [1, 2, 5, 9], [3, 3, 4, 6]])
case("NPU.npu_yolo_boxes_encode", _ANCHORS, V([[1.0, 0.5, 3, 4], [0, 1, 7, 8], [3.5, 2, 3.6, 7]]), V([2, 8, 4], "int32"),
     composition=C.npu_yolo_boxes_encode, constants=[0, 1])
_ROT = V([[[0.0, 2, 1], [1, 0, 3], [4, 5, 1.5], [3, 4, 6], [30, -45, 10]]])
_ROT_GT = V([[[0.5, 1, 2], [1.5, 0.5, 2], [5, 4, 6], [4, 6, 3], [20, -30, 60]]])
case("NPU.npu_rotated_box_encode", _ROT, _ROT_GT, V([10.0, 10, 5, 5, 1]), composition=C.npu_rotated_box_encode, constants=[0, 1, 2])
case("NPU.npu_rotated_box_decode", _ROT, T(1, 5, 3, low=-0.5, high=0.5), V([1.0, 2, 1, 2, 1]), composition=C.npu_rotated_box_decode,
     constants=[0, 1, 2])
case("NPU.npu_anchor_response_flags", V([[1.0, 2, 10, 8], [20, 5, 28, 30], [50, 60, 70, 80]]), [4, 5], [8, 8], 3,
     composition=C.npu_anchor_response_flags, constants=[0])
_OVERLAPS = [[0.1, 0.6, 0.3, 0.2, 0.05], [0.7, 0.2, 0.3, 0.2, 0.4], [0.2, 0.1, 0.3, 0.05, 0.4]]
_GRID = [V([0.0, -1, 0, -1, 0]), V(_OVERLAPS), V([1, 1, 0, 1, 1], "uint8"), V([0.7, 0.6, 0.3, 0.2, 0.4]), V([1, 0, 0, 0, 1], "int32"),
         V([0.6, 0.7, 0.4]), V([1, 0, 4], "int32"), 3, 0.5, 0.1]
case("NPU.npu_grid_assign_positive", *_GRID, True, composition=C.npu_grid_assign_positive, constants=[0, 1, 3, 5])
case("NPU.npu_grid_assign_positive", *_GRID, False, composition=C.npu_grid_assign_positive, constants=[0, 1, 3, 5])
_ROIS5 = V([[0, -2, -2, 22, 22], [1, 1, 2, 14, 18.5], [0, 4, 4, 9, 7]])
for _mode, _sample in [(0, 2), (1, 2), (2, 0), (3, 1)]:
    case("NPU.npu_roi_align", T(2, 3, 6, 6), _ROIS5, 0.25, 3, 2, _sample, _mode, composition=C.npu_roi_align, constants=[0, 1])
case("NPU.npu_roi_alignbk", T(3, 3, 3, 2), _ROIS5, [2, 3, 6, 6], 2, 3, 0.25, 2, composition=C.npu_roi_alignbk, constants=[0, 1])
case("NPU.npu_roi_alignbk", T(3, 3, 3, 2), _ROIS5, [2, 3, 6, 6], 2, 3, 0.25, 0, 0, composition=C.npu_roi_alignbk, constants=[0, 1])


def run_case(index, c, out_dir):
    """Runs one case through both oracles; returns its index entry."""
    rng = np.random.default_rng([SEED, index])
    writer = CaseWriter(out_dir, index)
    args, json_args, kwargs, json_kwargs, texts = realize_call(c, rng, writer)

    # The float tensors of a list argument (npu_grouped_matmul's) are differentiated like
    # top-level ones, as the runtime does (reference.py's rule).
    def leaf(key, v):
        if isinstance(v, (list, tuple)):
            return type(v)(leaf(key, x) for x in v)
        wanted = isinstance(v, torch.Tensor) and v.is_floating_point() and key not in c.constants
        return v.detach().requires_grad_(True) if wanted else v

    def tensors_of(v):
        if isinstance(v, (list, tuple)):
            return [t for x in v for t in tensors_of(x)]
        return [v] if isinstance(v, torch.Tensor) else []

    args = [leaf(i, v) for i, v in enumerate(args)]
    kwargs = {k: leaf(k, v) for k, v in kwargs.items()}
    slots = args + list(kwargs.values())
    differentiate = [isinstance(v, torch.Tensor) and v.requires_grad for v in slots]
    leaves = [t for v in slots for t in tensors_of(v) if t.requires_grad]
    result = c.composition(*args, **kwargs)
    outputs = [result] if isinstance(result, torch.Tensor) else list(result)
    gy = [torch.from_numpy(rng.standard_normal(o.shape)) if o is not None and o.requires_grad else None for o in outputs]
    pairs = [(o, g) for o, g in zip(outputs, gy) if g is not None]
    backward = bool(pairs) and bool(leaves)
    grads = torch.autograd.grad([o for o, _ in pairs], leaves, [g for _, g in pairs], allow_unused=True) if backward else []
    def detach(v):
        if isinstance(v, (list, tuple)):
            return type(v)(detach(x) for x in v)
        return v.detach() if isinstance(v, torch.Tensor) else v

    detached = [detach(a) for a in args]
    detached_kw = {k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    save = lambda what, t: None if t is None else writer.save(what, t.detach())  # noqa: E731
    return {
        "name": c.name,
        # MindSpore's own meanings are listed as MS.<dump name> in the op table.
        "dump_name": c.name.removeprefix("MS."),
        "framework": "mindspore" if c.name.startswith("MS.") else "pytorch",
        "call": f"{c.name}({', '.join(texts)})",
        "args": json_args,
        "kwargs": json_kwargs,
        "differentiate": differentiate,
        # An output the kernel leaves unspecified is None on both sides.
        "outputs": [{"file": None, "dtype": None} if o is None else
                    {"file": writer.save(f"out{i}", o), "dtype": OUTPUT_DTYPES.get(c.name, {}).get(i, str(o.dtype).removeprefix("torch."))}
                    for i, o in enumerate(outputs)],
        "backward": backward,
        "grad_outputs": [save(f"gout{i}", g) for i, g in enumerate(gy)] if backward else None,
        "grads": [writer.save(f"grad{i}", torch.zeros_like(x) if g is None else g) for i, (x, g) in enumerate(zip(leaves, grads))] if backward else None,
        "values_undefined": c.undefined,
        "oracles": [] if c.msprobe is None else [msprobe_oracle(c, detached, detached_kw, outputs, gy, save)],
    }


def msprobe_oracle(c, args, kwargs, outputs, gy, save):
    """msprobe 26.2.0's reference of the case: its outputs and gradients, saved."""
    ms_out, ms_grads = c.msprobe(args, kwargs, outputs, gy)
    return {
        "name": "msprobe 26.2.0",
        "outputs": [save(f"ms_out{i}", o) for i, o in enumerate(ms_out)],
        "grads": [save(f"ms_grad{i}", g) for i, g in enumerate(ms_grads)],
        "tolerance": c.tolerance,
    }


def main():
    out_dir = Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    warnings.simplefilter("ignore")
    torch.set_default_dtype(torch.float64)
    entries = []
    for index, c in enumerate(CASES):
        try:
            entries.append(run_case(index, c, out_dir))
        except Exception as e:
            raise SystemExit(f"case {index} ({c.name}): failed: {e!r}")
    (out_dir / "cases.json").write_text(json.dumps({"cases": entries}, indent=1))
    print(f"{len(entries)} cases written to {out_dir}")


if __name__ == "__main__":
    main()
