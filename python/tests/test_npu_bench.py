"""The scripts' torch references of torch_npu's fused ops (npu_bench) against the torch
compositions the runtime's NPU entries are tested with (runtime/tests/npu_misc/compositions.py
and runtime/tests/npu/compositions.py): the same outputs and, where torch_npu defines a
backward, the same gradients, in float64."""

import ast
import importlib.util
import os

import pytest
import torch

from msprobe_rs.repro import _tables, npu_bench

RUNTIME_TESTS = os.path.join(os.path.dirname(__file__), "..", "..", "runtime", "tests")


def load(folder):
    """A compositions.py of the runtime's tests, by path (both folders have one)."""
    spec = importlib.util.spec_from_file_location(f"compositions_{folder}", os.path.join(RUNTIME_TESTS, folder, "compositions.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MISC = load("npu_misc")
FUSED = load("npu")


def rand(*shape, low=-2.0, high=2.0, seed=[0]):
    seed[0] += 1
    g = torch.Generator().manual_seed(seed[0])
    return torch.rand(*shape, generator=g, dtype=torch.float64) * (high - low) + low


def leaves(out):
    return [o for o in (out if isinstance(out, (list, tuple)) else [out])]


def agree(reference, composition, args, kwargs=None, grad=()):
    """reference(*args) and composition(*args) give the same outputs and, for the
    arguments at the positions in grad, the same gradients."""
    kwargs = kwargs or {}

    def run(fn):
        inputs = [a.clone().requires_grad_(True) if i in grad else a for i, a in enumerate(args)]
        outs = leaves(fn(*inputs, **kwargs))
        if not grad:
            return outs, []
        floats = [o for o in outs if isinstance(o, torch.Tensor) and o.requires_grad]
        gs = torch.autograd.grad(floats, [inputs[i] for i in grad], [torch.ones_like(o) * (1 + torch.arange(o.numel(), dtype=o.dtype).reshape(o.shape) % 3) for o in floats])
        return outs, list(gs)

    (r_out, r_grads), (c_out, c_grads) = run(reference), run(composition)
    assert len(r_out) == len(c_out)
    for r, c in zip(r_out + r_grads, c_out + c_grads):
        if r is None or c is None:
            assert r is None and c is None
            continue
        assert r.shape == c.shape and (r.dtype == c.dtype or r.is_floating_point()), (r.shape, c.shape, r.dtype, c.dtype)
        assert torch.allclose(r.double(), c.double(), rtol=1e-12, atol=1e-12), (r, c)


def test_every_npu_name_of_the_op_table_has_its_reference():
    with open(npu_bench.__file__, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("ref_")}
    aliases = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if t.id.startswith("ref_")}
    assert {f"ref_{op}" for op in _tables.NPU_REFERENCES} == defined | aliases


def test_the_npu_misc_references_agree_with_their_compositions():
    agree(npu_bench.ref_npu_linear, MISC.linear, [rand(4, 6), rand(5, 6), rand(5)], grad=(0, 1, 2))
    agree(npu_bench.ref_npu_linear, MISC.linear, [rand(3, 2), rand(4, 2)], grad=(0, 1))
    for shape, perm, target, first in [((2, 3, 4), [0, 2, 1], [2, 12], True), ((2, 12), [1, 0, 2], [2, 3, 4], False)]:
        agree(npu_bench.ref_npu_confusion_transpose, MISC.confusion_transpose, [rand(*shape), perm, target, first], grad=(0,))
    state = [rand(3, 4), rand(3, 4), rand(3, 4, low=0.0, high=1.0)]
    for nesterov in (False, True):
        agree(npu_bench.ref_npu_apply_adam, MISC.apply_adam, [0.729, 0.997, 0.01, 0.9, 0.999, 1e-8, rand(3, 4), False, nesterov], {"out": state})
    for amsgrad, maximize in [(False, False), (False, True), (True, False)]:
        agree(npu_bench.ref_npu_apply_adam_w, MISC.apply_adam_w,
              [0.9, 0.999, 0.01, 0.1, 0.9, 0.999, 1e-8, rand(3, 4), rand(3, 4) if amsgrad else None, amsgrad, maximize], {"out": state})
    agree(npu_bench.ref_npu_layer_norm_eval, MISC.layer_norm_eval, [rand(2, 3, 4), [3, 4], rand(3, 4), rand(3, 4)], {"eps": 1e-3})
    agree(npu_bench.ref_npu_group_norm_silu, MISC.group_norm_silu, [rand(2, 6, 3, 4), rand(6), rand(6), 3])
    finished = torch.tensor([False, True, False, True])
    agree(npu_bench.ref_npu_moe_gating_top_k_softmax, MISC.moe_gating_top_k_softmax, [rand(4, 6), finished, 3])
    agree(npu_bench.ref_npu_sort_v2, MISC.sort_v2, [rand(4, 3, 2)], {"dim": 0, "descending": True})
    for a, b, mask in [((2, 3, 4), (4, 5), [True, True]), ((4,), (2, 4, 5), [False, True]), ((2, 1, 3, 4), (3, 4, 2), [True, False])]:
        a, b = rand(*a), rand(*b)
        agree(npu_bench.ref_matmul_backward, MISC.matmul_backward, [rand(*torch.matmul(a, b).shape), a, b, mask])


def test_the_fused_references_agree_with_their_compositions():
    agree(npu_bench.ref_npu_rms_norm, FUSED.npu_rms_norm, [rand(2, 3, 8), rand(8)], {"epsilon": 1e-5}, grad=(0, 1))
    agree(npu_bench.ref_npu_rms_norm, FUSED.npu_rms_norm, [rand(2, 3, 4), rand(3, 4)], grad=(0, 1))
    agree(npu_bench.ref_npu_swiglu, FUSED.npu_swiglu, [rand(3, 8)], grad=(0,))
    agree(npu_bench.ref_npu_swiglu, FUSED.npu_swiglu, [rand(4, 2, 3)], {"dim": 0}, grad=(0,))
    agree(npu_bench.ref_npu_fast_gelu, FUSED.npu_fast_gelu, [rand(5, 7, low=-8.0, high=8.0)], grad=(0,))
    assert npu_bench.ref_fast_gelu is npu_bench.ref_npu_fast_gelu
    agree(npu_bench.ref_npu_mish, FUSED.npu_mish, [rand(5, 7, low=-8.0, high=8.0)], grad=(0,))
    for mode in ("half", "interleave"):
        agree(npu_bench.ref_npu_rotary_mul, FUSED.npu_rotary_mul, [rand(2, 3, 4, 8), rand(1, 3, 1, 8), rand(1, 3, 1, 8)],
              {"rotary_mode": mode}, grad=(0, 1, 2))
    mask = rand(2, 1, 4, 6) > 0.5
    agree(npu_bench.ref_npu_scaled_masked_softmax, FUSED.npu_scaled_masked_softmax, [rand(2, 3, 4, 6), mask], {"scale": 0.5}, grad=(0,))
    agree(npu_bench.ref_npu_scaled_masked_softmax, FUSED.npu_scaled_masked_softmax, [rand(2, 3, 4, 4), mask[..., :4]],
          {"fixed_triu_mask": True}, grad=(0,))


@pytest.mark.parametrize("layout,shapes,kwargs", [
    ("BNSD", [(2, 4, 5, 8), (2, 2, 6, 8), (2, 2, 6, 8)], {"scale": 0.35}),
    ("BSND", [(2, 5, 4, 8), (2, 5, 4, 8), (2, 5, 4, 8)], {"sparse_mode": 2}),
    ("BSH", [(2, 5, 32), (2, 6, 16), (2, 6, 16)], {"sparse_mode": 3, "scale": 0.5}),
    ("SBH", [(5, 2, 32), (5, 2, 32), (5, 2, 32)], {"sparse_mode": 4, "pre_tockens": 1, "next_tockens": 2}),
    ("TND", [(7, 4, 8), (9, 4, 8), (9, 4, 8)], {"actual_seq_qlen": [3, 7], "actual_seq_kvlen": [4, 9], "sparse_mode": 3}),
])
def test_the_attention_reference_agrees_with_its_composition(layout, shapes, kwargs):
    q, k, v = (rand(*s) for s in shapes)
    agree(npu_bench.ref_npu_fusion_attention, FUSED.npu_fusion_attention, [q, k, v, 4, layout], kwargs, grad=(0, 1, 2))


def test_the_attention_reference_takes_pse_and_a_given_mask():
    q, k, v = rand(1, 2, 4, 8), rand(1, 2, 4, 8), rand(1, 2, 4, 8)
    mask = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1)
    agree(npu_bench.ref_npu_fusion_attention, FUSED.npu_fusion_attention, [q, k, v, 2, "BNSD"],
          {"pse": rand(1, 2, 4, 4), "atten_mask": mask, "sparse_mode": 1}, grad=(0, 1, 2))
    with pytest.raises(NotImplementedError, match="keep_prob"):
        npu_bench.ref_npu_fusion_attention(q, k, v, 2, "BNSD", keep_prob=0.9)


def test_the_spelling_references_agree_with_their_compositions():
    """torch_npu's spellings of torch functions (runtime/src/ops/npu_torch.rs)."""
    agree(npu_bench.ref_npu_conv2d, FUSED.npu_conv2d, [rand(2, 3, 6, 6), rand(4, 3, 3, 3), rand(4), [1, 1], [1, 1], [1, 1], 1], grad=(0, 1, 2))
    agree(npu_bench.ref_npu_convolution, FUSED.npu_convolution, [rand(1, 4, 5, 5), rand(4, 2, 3, 3), None, [2, 2], [1, 0], [1, 1], 2], grad=(0, 1))
    agree(npu_bench.ref_npu_conv_transpose2d, FUSED.npu_conv_transpose2d, [rand(2, 3, 4, 4), rand(3, 2, 3, 3), rand(2), [1, 1], [1, 0], [2, 2], [1, 1], 1],
          grad=(0, 1, 2))
    agree(npu_bench.ref_npu_gelu, FUSED.npu_gelu, [rand(3, 4)], {"approximate": "tanh"}, grad=(0,))
    agree(npu_bench.ref_npu_indexing, FUSED.npu_indexing, [rand(4, 6), [1, 1], [3, 5], [1, 3]], {"begin_mask": 1, "end_mask": 2}, grad=(0,))
    agree(npu_bench.ref_npu_slice, FUSED.npu_slice, [rand(4, 5), [1, 2], [2, 3]], grad=(0,))
    agree(npu_bench.ref_npu_add_rms_norm, FUSED.npu_add_rms_norm, [rand(2, 3, 8), rand(2, 3, 8), rand(8)], grad=(0, 1, 2))
    agree(npu_bench.ref_npu_max, FUSED.npu_max, [rand(3, 5), 1], grad=(0,))
    agree(npu_bench.ref_npu_one_hot, FUSED.npu_one_hot, [torch.tensor([0, 3, 1, 7, -1]), -1, 5])
    agree(npu_bench.ref_npu_softmax_cross_entropy_with_logits, FUSED.npu_softmax_cross_entropy_with_logits, [rand(4, 6), rand(4, 6)], grad=(0, 1))
    agree(npu_bench.ref_npu_pad, FUSED.npu_pad, [rand(2, 3, 2), [0, 1, 0, 0, 2, 2]], grad=(0,))
    agree(npu_bench.ref_npu_geglu, FUSED.npu_geglu, [rand(4, 6), 0, 0, True], grad=(0,))
    agree(npu_bench.ref_npu_scatter_nd_update, FUSED.npu_scatter_nd_update, [rand(3, 4), torch.tensor([[0, 1], [2, 3]]), rand(2)])
    agree(npu_bench.ref_scatter_update, FUSED.scatter_update, [rand(3, 2, 5, 4), torch.tensor([[2, 0], [0, 3]]), rand(2, 2, 2, 4), -2])
    rois = torch.tensor([[1.0, 2, 3, 4], [3, 4, 5, 6], [0, 1, 8, 5]], dtype=torch.float64)
    gts = torch.tensor([[5.0, 6, 7, 8], [7, 8, 9, 7], [1, 0, 6, 6]], dtype=torch.float64)
    agree(npu_bench.ref_npu_bounding_box_encode, FUSED.npu_bounding_box_encode, [rois, gts, 0.0, 0.0, 0.0, 0.0, 0.1, 0.1, 0.2, 0.2])
    agree(npu_bench.ref_npu_bounding_box_decode, FUSED.npu_bounding_box_decode,
          [rois, rand(3, 4), 0.0, 0.1, 0.0, -0.1, 1.0, 1.0, 0.5, 0.5, [10, 8], 0.1])
    # The op-plugin test's numbers: rois and deltas [[5, 6, 7, 8], [7, 8, 9, 6]], clip 0.1, a 10x10 image.
    out = npu_bench.ref_npu_bounding_box_decode(rois[:2], torch.tensor([[5.0, 6, 7, 8], [7, 8, 9, 6]], dtype=torch.float64),
                                                0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, [10, 10], 0.1)
    assert torch.allclose(out, torch.tensor([[2.5, 6.5, 9, 9], [9, 9, 9, 9]], dtype=torch.float64))


def test_the_moe_references_agree_with_their_compositions():
    """torch_npu's MoE kernels (runtime/src/ops/npu_moe.rs)."""
    row_idx, experts = torch.tensor([[0, 3], [1, 4], [2, 5]], dtype=torch.int32), torch.tensor([[1, 2], [0, 1], [0, 2]], dtype=torch.int32)
    agree(npu_bench.ref_npu_moe_init_routing, FUSED.npu_moe_init_routing, [rand(3, 4), row_idx, experts, 2])
    sorted_experts = torch.tensor([0, 0, 1, 3, 3, 3], dtype=torch.int32)
    agree(npu_bench.ref_npu_moe_compute_expert_tokens, FUSED.npu_moe_compute_expert_tokens, [sorted_experts, 5])
    dst = torch.tensor([2, 0, 5, 1, 4, 3], dtype=torch.int32)
    agree(npu_bench.ref_npu_moe_finalize_routing, FUSED.npu_moe_finalize_routing,
          [rand(6, 4), rand(3, 4), rand(3, 4), rand(5, 4), rand(3, 2), dst, torch.tensor([[1, 4], [0, 2], [3, 3]])])
    experts = torch.tensor([[2, 0], [1, 2], [0, 2], [3, 1]], dtype=torch.int32)
    for kwargs in ({"scale": rand(4), "expert_num": 4, "expert_tokens_num_flag": True},
                   {"active_num": 5, "expert_num": 4, "expert_tokens_num_type": 1, "expert_tokens_num_flag": True, "row_idx_type": 1},
                   {"active_num": 2, "expert_num": 4, "active_expert_range": [1, 3], "expert_tokens_num_flag": True}):
        agree(npu_bench.ref_npu_moe_init_routing_v2, FUSED.npu_moe_init_routing_v2, [rand(4, 3), experts], kwargs)
    ranged = npu_bench.ref_npu_moe_init_routing_v2(rand(4, 3), experts, expert_num=4, active_expert_range=[1, 3])
    assert ranged[0] is None and ranged[1].tolist() == [2, -1, 0, 3, -1, 4, -1, 1]
    pairs = npu_bench.ref_npu_moe_init_routing_v2(rand(4, 3), experts, expert_num=4, expert_tokens_num_flag=True, expert_tokens_num_type=2)[2]
    assert pairs.tolist() == [[0, 2], [1, 2], [2, 3], [3, 1]]  # every expert used: no closing (0, 0) row
    agree(npu_bench.ref_npu_moe_finalize_routing, FUSED.npu_moe_finalize_routing,
          [rand(6, 4), rand(3, 4), None, rand(5, 4), rand(3, 2), dst, torch.tensor([[1, 4], [0, 2], [3, 3]]), 2])
    agree(npu_bench.ref_npu_grouped_matmul, FUSED.npu_grouped_matmul, [[rand(3, 4), rand(2, 4)], [rand(4, 5), rand(4, 5)]],
          {"bias": [rand(5), rand(5)]})
    agree(npu_bench.ref_npu_grouped_matmul, FUSED.npu_grouped_matmul, [[rand(5, 4)], [rand(2, 4, 3)]],
          {"group_list": torch.tensor([2, 3]), "split_item": 3, "group_type": 0, "group_list_type": 1})


def test_the_inference_references_agree_with_their_compositions():
    """More inference kernels (runtime/src/ops/npu_infer.rs)."""
    agree(npu_bench.ref_npu_add_rms_norm_v2, FUSED.npu_add_rms_norm_v2, [rand(2, 3, 8), rand(2, 3, 8), rand(8)])
    agree(npu_bench.ref_npu_apply_rotary_pos_emb, FUSED.npu_apply_rotary_pos_emb, [rand(2, 3, 4, 8), rand(2, 3, 2, 8), rand(2, 3, 1, 8), rand(2, 3, 1, 8)])
    agree(npu_bench.ref_npu_transpose_batchmatmul, FUSED.npu_transpose_batchmatmul, [rand(2, 3, 4), rand(3, 4, 6)],
          {"perm_x1": [1, 0, 2], "batch_split_factor": 3})
    for op in ("", "add", "mul", "gelu_erf", "gelu_tanh", "relu"):
        agree(npu_bench.ref_npu_fused_matmul, FUSED.npu_fused_matmul, [rand(2, 3, 4), rand(4, 5)], {"bias": rand(5), "x3": rand(2, 3, 5), "fused_op_type": op})
    lse, outs = [rand(6), rand(6)], [rand(6, 4), rand(6, 4)]
    assert torch.allclose(npu_bench.ref_npu_attention_update(lse, outs, 1)[0], FUSED.npu_attention_update(lse, outs, 1)[0])
    groups = torch.tensor([2, 5, 7])
    agree(npu_bench.ref_npu_grouped_matmul_add_, FUSED.npu_grouped_matmul_add_, [rand(3, 4, 5), rand(7, 4), rand(7, 5), groups])
    packed = npu_bench.ref_npu_sign_bits_pack(torch.tensor([5.0, 4, 3, 2, 0, -1, -2, 4, 3, 2, 1, 0, -1, -2]), 1)
    assert packed.tolist() == [[159, 15]]  # torch_npu's documented example
    agree(npu_bench.ref_npu_sign_bits_unpack, FUSED.npu_sign_bits_unpack, [torch.tensor([159, 15], dtype=torch.uint8), 2, torch.float32])
    start, end = torch.tensor([[0, 2, 1], [3, 4, 0]]), torch.tensor([[2, 5, 6], [6, 6, 3]])
    agree(npu_bench.ref_npu_masked_fill_range, FUSED.npu_masked_fill_range, [rand(3, 2, 6), start, end, torch.tensor([9.0, -9.0], dtype=torch.float64)])
    agree(npu_bench.ref_npu_moe_gating_top_k, FUSED.npu_moe_gating_top_k, [rand(4, 8), 3],
          {"bias": rand(8), "k_group": 2, "group_count": 4, "group_select_mode": 1, "routed_scaling_factor": 2.5})


def test_the_flash_attention_inference_references_agree_with_their_compositions():
    agree(npu_bench.ref_npu_prompt_flash_attention, FUSED.npu_prompt_flash_attention, [rand(2, 4, 16), rand(2, 4, 16), rand(2, 4, 16)],
          {"num_heads": 2, "scale_value": 0.35})
    agree(npu_bench.ref_npu_incre_flash_attention, FUSED.npu_incre_flash_attention, [rand(2, 1, 32), rand(2, 5, 16), rand(2, 5, 16)],
          {"num_heads": 4, "scale_value": 0.25, "num_key_value_heads": 2})
    with pytest.raises(NotImplementedError, match="paged"):
        npu_bench.ref_npu_incre_flash_attention(rand(2, 1, 32), rand(2, 5, 16), rand(2, 5, 16), block_table=torch.zeros(2, 1))


def test_the_fused_inference_attention_references_agree_with_their_compositions():
    agree(npu_bench.ref_npu_fused_infer_attention_score, FUSED.npu_fused_infer_attention_score, [rand(2, 4, 16), rand(2, 4, 16), rand(2, 4, 16)],
          {"num_heads": 2, "scale": 0.35, "softmax_lse_flag": True})
    agree(npu_bench.ref_npu_fused_infer_attention_score_v2, FUSED.npu_fused_infer_attention_score_v2, [rand(2, 1, 32), rand(2, 5, 16), rand(2, 5, 16)],
          {"num_query_heads": 4, "num_key_value_heads": 2, "softmax_scale": 0.25})
    assert npu_bench.ref_npu_fused_infer_attention_score(rand(1, 2, 8), rand(1, 2, 8), rand(1, 2, 8))[1].tolist() == [0.0]
    with pytest.raises(NotImplementedError, match="quantized, paged"):
        npu_bench.ref_npu_fused_infer_attention_score(rand(1, 2, 8), rand(1, 2, 8), rand(1, 2, 8), block_table=torch.zeros(1, 1))
    lengths = {"actual_seq_qlen": torch.tensor([2, 5]), "actual_seq_kvlen": torch.tensor([3, 6]), "sparse_mode": 3, "scale": 0.5}
    agree(npu_bench.ref_npu_fusion_attention_v3, FUSED.npu_fusion_attention_v3, [rand(5, 2, 4), rand(6, 2, 4), rand(6, 2, 4), 2, "TND"], lengths,
          grad=(0, 1, 2))


def test_the_routing_references_agree_with_their_compositions():
    """Token routing (runtime/src/ops/npu_route.rs)."""
    experts = torch.tensor([[1, 0], [2, 1], [0, 2], [1, 1], [2, 0]])
    for n in (None, 7, -1):
        agree(npu_bench.ref_npu_moe_token_permute, FUSED.npu_moe_token_permute, [rand(5, 3), experts, n], grad=(0,))
    went = npu_bench.ref_npu_moe_token_permute(rand(5, 3), experts)[1]
    for n_rows in (10, 7):
        agree(npu_bench.ref_npu_moe_token_unpermute, FUSED.npu_moe_token_unpermute, [rand(n_rows, 3), went, rand(5, 2)], grad=(0, 2))
    routing = torch.tensor([[1, 0, 1], [0, 1, 1], [1, 1, 0], [1, 0, 1]], dtype=torch.bool)
    agree(npu_bench.ref_npu_moe_token_permute_with_routing_map, FUSED.npu_moe_token_permute_with_routing_map, [rand(4, 3), routing],
          {"probs": rand(4, 3), "num_out_tokens": 8})
    counts = torch.tensor([[1, 2], [3, 1]], dtype=torch.int32)
    agree(npu_bench.ref_npu_moe_re_routing, FUSED.npu_moe_re_routing, [rand(7, 3), counts], {"per_token_scales": rand(7)})
    assert npu_bench.ref_npu_moe_re_routing(rand(7, 3), counts)[2].tolist() == [0, 3, 4, 5, 1, 2, 6]
    agree(npu_bench.ref_npu_gather_sparse_index, FUSED.npu_gather_sparse_index, [rand(5, 3), torch.tensor([[0, 4], [2, 2]])], grad=(0,))


def test_the_logits_references_agree_with_their_compositions():
    """Logits and expert scores (runtime/src/ops/npu_logits.rs)."""
    agree(npu_bench.ref_npu_top_k_top_p, FUSED.npu_top_k_top_p, [rand(3, 8)], {"p": torch.tensor([0.5, 0.9, 0.2], dtype=torch.float64),
                                                                              "k": torch.tensor([3, 0, 8])})
    ties = torch.tensor([[1.0, 2, 2, 0, 3], [0, 0, 1, 1, 1]], dtype=torch.float64)
    assert npu_bench.ref_npu_top_k_top_p(ties, k=torch.tensor([2, 4])).isinf().tolist() == [[True, False, False, True, False], [False] * 5]
    target = torch.tensor([0, 3, 1, 1, 2])
    for args in ([], [rand(4).abs() + 0.5, "sum", 3, 0.1], [None, "none", -100, 0.2], [rand(4).abs() + 0.5, "mean", -100, 0.3]):
        agree(npu_bench.ref_npu_cross_entropy_loss, FUSED.npu_cross_entropy_loss, [rand(5, 4), target, *args], grad=(0,))
    agree(npu_bench.ref_npu_fused_add_topk_div, FUSED.npu_fused_add_topk_div, [rand(3, 16), rand(16) / 10],
          {"group_num": 4, "group_topk": 2, "n": 2, "k": 4})


def test_the_rotary_activation_and_layout_references_agree_with_their_compositions():
    """Rotary, activation, normalization and layout kernels (runtime/src/ops/npu_act.rs)."""
    agree(npu_bench.ref_npu_interleave_rope, FUSED.npu_interleave_rope, [rand(2, 2, 3, 8), rand(2, 1, 3, 8), rand(2, 1, 3, 8)])
    pos, pos3 = torch.tensor([0, 3, 5, 2]), torch.tensor([[0, 1, 2, 3], [3, 2, 1, 0], [5, 5, 4, 4]])
    agree(npu_bench.ref_npu_mrope, FUSED.npu_mrope, [pos, rand(4, 16), rand(4, 8), rand(6, 8), 8])
    agree(npu_bench.ref_npu_mrope, FUSED.npu_mrope, [pos, rand(4, 16), rand(4, 8), rand(6, 4), 8], {"rotary_mode": "interleave"})
    agree(npu_bench.ref_npu_mrope, FUSED.npu_mrope, [pos3, rand(4, 16), rand(4, 8), rand(6, 8), 8], {"mrope_section": [1, 1, 2]})
    agree(npu_bench.ref_npu_mrope, FUSED.npu_mrope, [pos3, rand(4, 16), rand(4, 8), rand(6, 8), 8],
          {"mrope_section": [2, 1, 1], "cache_mode": "interleave"})
    for approximate in ("none", "tanh"):
        agree(npu_bench.ref_npu_gelu_mul, FUSED.npu_gelu_mul, [rand(3, 8)], {"approximate": approximate})
    agree(npu_bench.ref_npu_clipped_swiglu, FUSED.npu_clipped_swiglu, [rand(3, 8) * 5])
    agree(npu_bench.ref_npu_clipped_swiglu, FUSED.npu_clipped_swiglu, [rand(2, 4, 3) * 5],
          {"dim": 1, "interleaved": False, "alpha": 1.5, "limit": 5.0, "bias": 0.5})
    assert npu_bench.ref_npu_clipped_swiglu(rand(3, 8), group_index=torch.tensor([1, 1])) is None
    agree(npu_bench.ref_npu_group_norm_swish, FUSED.npu_group_norm_swish, [rand(2, 4, 3), 2, rand(4), rand(4)], {"swish_scale": 1.5},
          grad=(0, 2, 3))
    for kind, lengths in ((0, [5, 3]), (1, [4, 2])):
        agree(npu_bench.ref_npu_normalize_batch, FUSED.npu_normalize_batch, [rand(2, 3, 5), torch.tensor(lengths), kind])
    agree(npu_bench.ref_npu_stride_add, FUSED.npu_stride_add, [rand(1, 3, 2, 2), rand(1, 20, 2, 2), 0, 1, 1])
    for act in ("relu", "silu", "gelu", "fastgelu"):
        agree(npu_bench.ref_npu_ffn, FUSED.npu_ffn, [rand(5, 4), rand(4, 6), rand(6, 4), act], {"bias1": rand(6), "bias2": rand(4)})
    agree(npu_bench.ref_npu_ffn, FUSED.npu_ffn, [rand(1, 5, 4), rand(2, 4, 6), rand(2, 6, 3), "gelu"], {"expert_tokens_index": [2, 5]})
    indices = torch.tensor([[2, 0, 1, 1], [0, 2, 2, 1]], dtype=torch.int32)
    agree(npu_bench.ref_npu_scatter, FUSED.npu_scatter, [rand(2, 3, 4), indices, rand(2, 4), 1])
    weight = torch.tensor([[-8, -1, 0, 1, 7, 3, -4, 2, 5, 6, -7, -2, 4, 0, 1, -3], [7] * 8 + [-8] * 8], dtype=torch.int32)
    agree(npu_bench.ref_npu_convert_weight_to_int4pack, FUSED.npu_convert_weight_to_int4pack, [weight])
    assert npu_bench.ref_npu_convert_weight_to_int4pack(weight)[1].tolist() == [0x77777777, -0x77777778]


def test_the_detection_references_agree_with_their_compositions():
    """Detection kernels (runtime/src/ops/npu_boxes.rs)."""
    def boxes(n):
        return torch.rand(4, n, dtype=torch.float64) * 2.5 + 0.5
    agree(npu_bench.ref_npu_giou, FUSED.npu_giou, [boxes(5), boxes(5), True], grad=(0, 1))
    for args in ([boxes(5), boxes(5), True], [boxes(3), boxes(2), True, True]):
        agree(npu_bench.ref_npu_diou, FUSED.npu_diou, args, grad=(0, 1))
        agree(npu_bench.ref_npu_ciou, FUSED.npu_ciou, args[:2] + [True, len(args) == 4])
    anchors = torch.tensor([[0.0, 0, 4, 3], [1, 2, 5, 9], [3, 3, 4, 6]], dtype=torch.float64)
    agree(npu_bench.ref_npu_yolo_boxes_encode, FUSED.npu_yolo_boxes_encode,
          [anchors, torch.tensor([[1.0, 0.5, 3, 4], [0, 1, 7, 8], [3.5, 2, 3.6, 7]], dtype=torch.float64), torch.tensor([2, 8, 4], dtype=torch.int32)])
    rot = torch.tensor([[[0.0, 2, 1], [1, 0, 3], [4, 5, 1.5], [3, 4, 6], [30, -45, 10]]], dtype=torch.float64)
    weight = torch.tensor([10.0, 10, 5, 5, 1], dtype=torch.float64)
    agree(npu_bench.ref_npu_rotated_box_encode, FUSED.npu_rotated_box_encode, [rot, rot.flip(-1) + 0.5, weight])
    agree(npu_bench.ref_npu_rotated_box_decode, FUSED.npu_rotated_box_decode, [rot, rand(1, 5, 3) / 4, weight])
    gts = torch.tensor([[1.0, 2, 10, 8], [20, 5, 28, 30], [50, 60, 70, 80]])
    agree(npu_bench.ref_npu_anchor_response_flags, FUSED.npu_anchor_response_flags, [gts, [4, 5], [8, 8], 3])
    overlaps = torch.tensor([[0.1, 0.6, 0.3, 0.2, 0.05], [0.7, 0.2, 0.3, 0.2, 0.4], [0.2, 0.1, 0.3, 0.05, 0.4]], dtype=torch.float64)
    grid = [torch.tensor([0.0, -1, 0, -1, 0], dtype=torch.float64), overlaps, torch.tensor([1, 1, 0, 1, 1], dtype=torch.uint8),
            overlaps.max(0).values, overlaps.argmax(0).int(), overlaps.max(1).values, overlaps.argmax(1).int(), 3, 0.5, 0.1]
    for assign_all in (True, False):
        agree(npu_bench.ref_npu_grid_assign_positive, FUSED.npu_grid_assign_positive, grid + [assign_all])
    rois = torch.tensor([[0, -2, -2, 22, 22], [1, 1, 2, 14, 18.5], [0, 4, 4, 9, 7]], dtype=torch.float64)
    for mode, sample in ((0, 2), (1, 2), (2, 0), (3, 1)):
        agree(npu_bench.ref_npu_roi_align, FUSED.npu_roi_align, [rand(2, 3, 6, 6), rois, 0.25, 3, 2, sample, mode])
    agree(npu_bench.ref_npu_roi_alignbk, FUSED.npu_roi_alignbk, [rand(3, 3, 3, 2), rois, [2, 3, 6, 6], 2, 3, 0.25, 2])
    # op-plugin's forward golden: a 6x6 ramp from 1, roi [0, -2, -2, 22, 22], scale 0.25, 3x3 bins, 2 samples, mode 0.
    ramp = torch.arange(1, 37, dtype=torch.float64).reshape(1, 1, 6, 6)
    out = npu_bench.ref_npu_roi_align(ramp, rois[:1], 0.25, 3, 3, 2, 0)
    assert out.reshape(-1).tolist() == [4.5, 6.5, 8.5, 16.5, 18.5, 20.5, 28.5, 30.5, 32.5]


def test_what_the_kernels_leave_undetermined_is_refused_not_guessed():
    """A nucleus boundary within float32's rounding is refused; restore_shape does not reshape (torch_npu
    passes it to the kernel only); decoding attention ignores the sparse mode and its tokens."""
    with pytest.raises(NotImplementedError, match="nucleus boundary"):
        npu_bench.ref_npu_top_k_top_p(torch.zeros(1, 4, dtype=torch.float64), p=torch.tensor([0.5], dtype=torch.float64))
    out = npu_bench.ref_npu_moe_token_unpermute(rand(4, 3), torch.tensor([0, 1, 2, 3], dtype=torch.int32), rand(2, 2), restore_shape=[1, 2, 3])
    assert out.shape == (2, 3)
    q, k, v = rand(2, 1, 16), rand(2, 5, 16), rand(2, 5, 16)
    causal = npu_bench.ref_npu_fused_infer_attention_score(q, k, v, num_heads=2, sparse_mode=2, next_tokens=0)[0]
    assert torch.allclose(causal, npu_bench.ref_npu_fused_infer_attention_score(q, k, v, num_heads=2)[0])
