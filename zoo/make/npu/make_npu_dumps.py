"""Writes msprobe-format PyTorch tensor dumps of torch_npu's fused kernels
(`NPU.<op>.<N>` entries) into tests/fixtures/npu/: there is no NPU here, so
the recorded outputs and gradients come from an independent torch
implementation run on the CPU in float32 (the compositions of
runtime/tests/npu/compositions.py, which the runtime's entries are tested
against, not the runtime itself), laid out as msprobe 8.3.2's dumper writes
a tensor dump (task tensor, level L1): per call a forward entry
(`input_args`, `input_kwargs`, `output`: every output, the dropout
generator's seed, offset and numels as ints) and a backward entry (`input`:
the outputs' gradients, null where an output has none; `output`: the
differentiable inputs' gradients in input order), each tensor with its
Max/Min/Mean/Norm and a `.pt` file in dump_tensor_data/.

- clean/: the calls as recorded.
- planted/: the same calls with errors planted in recorded device values,
  one per call that has one (planted.json says where and how); the test
  (tests/npu.rs) pins the row each one fails and its Message.
- bf16_clean/: the elementwise and norm kernels (rms_norm, swiglu,
  fast_gelu, rotary_mul, scaled_masked_softmax) in bfloat16 as a device
  computes them: from bfloat16 inputs in float32, each output and gradient
  rounded once into bfloat16.
- bf16_scaled/: the same with output 0 of each forward 2 % too large
  (times 1.02, then rounded: about 2.5 bfloat16 epsilons, every element
  within its loose rounding bound; issue 34's case).

Seeded and deterministic: the same torch gives the same files.

Usage: make_npu_dumps.py [OUT]   (default: tests/fixtures/npu)
"""

import json
import shutil
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "runtime" / "tests" / "npu"))
import compositions as C  # noqa: E402

SEED = 22


def stats(t):
    """msprobe's summary of a tensor."""
    if t.numel() == 0:
        return {"Max": None, "Min": None, "Mean": None, "Norm": None}
    if t.dtype == torch.bool:
        return {"Max": bool(t.any()), "Min": bool(t.all()), "Mean": None, "Norm": None}
    f = t.detach().float()
    return {"Max": f.max().item(), "Min": f.min().item(), "Mean": f.mean().item(), "Norm": f.norm().item()}


class Dump:
    """One dump folder being written."""

    def __init__(self, folder):
        self.folder = folder
        self.data = {}
        (folder / "dump_tensor_data").mkdir(parents=True)

    def value(self, v, name):
        """An argument or result as msprobe records it; tensors saved as `name`.pt."""
        if isinstance(v, torch.Tensor):
            file = f"{name}.pt"
            torch.save(v.detach().clone().contiguous(), self.folder / "dump_tensor_data" / file)
            return {"type": "torch.Tensor", "dtype": str(v.dtype), "shape": list(v.shape), **stats(v),
                    "requires_grad": v.requires_grad, "data_name": file}
        if v is None:
            return None
        if isinstance(v, torch.dtype):
            return {"type": "torch.dtype", "value": str(v)}
        if isinstance(v, (list, tuple)):
            return [self.value(x, f"{name}.{i}") for i, x in enumerate(v)]
        return {"type": type(v).__name__, "value": v}

    def call(self, key, args, kwargs, outputs, extra_outputs, grad_outputs, grads):
        self.data[f"{key}.forward"] = {
            "input_args": [self.value(a, f"{key}.forward.input.{i}") for i, a in enumerate(args)],
            "input_kwargs": {k: self.value(v, f"{key}.forward.input.{k}") for k, v in kwargs.items()},
            "is_recompute": False,
            "output": [self.value(o, f"{key}.forward.output.{i}") for i, o in enumerate(outputs + extra_outputs)],
        }
        if grads is not None:
            self.data[f"{key}.backward"] = {
                "input": [self.value(g, f"{key}.backward.input.{i}") for i, g in enumerate(grad_outputs)],
                "output": [self.value(g, f"{key}.backward.output.{i}") for i, g in enumerate(grads)],
            }

    def write(self):
        dump = {"task": "tensor", "level": "L1", "framework": "pytorch", "dump_data_dir": None, "data": self.data}
        (self.folder / "dump.json").write_text(json.dumps(dump, indent=1) + "\n")


def rand(g, *shape, low=-2.0, high=2.0):
    return (torch.rand(*shape, generator=g) * (high - low) + low).float()


def calls():
    """(key, composition, args, kwargs, extra outputs): the recorded calls."""
    g = torch.Generator().manual_seed(SEED)
    triu = torch.ones(4, 4, dtype=torch.bool).triu(1)
    fa_extra = [torch.empty(0), 0, 0, 0]  # softmax_out (reserved), seed, offset, numels
    yield ("NPU.npu_fusion_attention.0", C.npu_fusion_attention, [rand(g, 2, 4, 16), rand(g, 2, 4, 16), rand(g, 2, 4, 16), 2, "BSH"], {"scale": 0.35}, fa_extra)
    yield ("NPU.npu_fusion_attention.1", C.npu_fusion_attention, [rand(g, 2, 2, 4, 8), rand(g, 2, 2, 4, 8), rand(g, 2, 2, 4, 8), 2, "BNSD"],
           {"atten_mask": triu, "scale": 0.35, "sparse_mode": 2}, fa_extra)
    yield ("NPU.npu_fusion_attention.2", C.npu_fusion_attention, [rand(g, 5, 2, 8), rand(g, 6, 2, 8), rand(g, 6, 2, 8), 2, "TND"],
           {"scale": 0.35, "actual_seq_qlen": [3, 5], "actual_seq_kvlen": [4, 6], "sparse_mode": 3}, fa_extra)
    yield ("NPU.npu_fusion_attention.3", C.npu_fusion_attention, [rand(g, 2, 4, 16), rand(g, 2, 4, 16), rand(g, 2, 4, 16), 2, "BSH"],
           {"scale": 0.35, "keep_prob": 0.9}, [torch.empty(0), 1234, 0, 128])
    yield ("NPU.npu_rms_norm.0", C.npu_rms_norm, [rand(g, 2, 3, 8), rand(g, 8, low=0.5, high=1.5)], {"epsilon": 1e-6}, [])
    yield ("NPU.npu_swiglu.0", C.npu_swiglu, [rand(g, 2, 3, 8)], {"dim": -1}, [])
    yield ("NPU.npu_fast_gelu.0", C.npu_fast_gelu, [rand(g, 4, 5, low=-4.0, high=4.0)], {}, [])
    yield ("NPU.npu_mish.0", C.npu_mish, [rand(g, 4, 5, low=-4.0, high=4.0)], {}, [])
    yield ("NPU.npu_rotary_mul.0", C.npu_rotary_mul, [rand(g, 2, 3, 4, 8), rand(g, 1, 3, 1, 8), rand(g, 1, 3, 1, 8)], {}, [])
    yield ("NPU.npu_scaled_masked_softmax.0", C.npu_scaled_masked_softmax, [rand(g, 2, 2, 4, 6), torch.rand(2, 1, 4, 6, generator=g) < 0.3],
           {"scale": 0.5}, [])
    # MoE and inference kernels (runtime/src/ops/npu_moe.rs, npu_torch.rs).
    yield ("NPU.npu_add_rms_norm.0", C.npu_add_rms_norm, [rand(g, 2, 3, 8), rand(g, 2, 3, 8), rand(g, 8, low=0.5, high=1.5)], {"epsilon": 1e-6}, [])
    yield ("NPU.npu_geglu.0", C.npu_geglu, [rand(g, 3, 8)], {}, [])
    yield ("NPU.npu_gelu.0", C.npu_gelu, [rand(g, 4, 5)], {}, [])
    yield ("NPU.npu_bmmV2.0", C.npu_bmmV2, [rand(g, 2, 3, 4), rand(g, 2, 4, 5), []], {}, [])
    yield ("NPU.npu_dtype_cast.0", C.npu_dtype_cast, [rand(g, 3, 4).double(), torch.float32], {}, [])
    yield ("NPU.npu_format_cast.0", C.npu_format_cast, [rand(g, 3, 4), 29], {}, [])
    yield ("NPU.npu_grouped_matmul.0", C.npu_grouped_matmul, [[rand(g, 6, 4)], [rand(g, 3, 4, 5)]],
           {"group_list": torch.tensor([2, 5, 6]), "split_item": 3, "group_type": 0}, [])
    yield ("NPU.npu_moe_init_routing.0", C.npu_moe_init_routing,
           [rand(g, 4, 6), torch.tensor([[0, 4], [1, 5], [2, 6], [3, 7]], dtype=torch.int32),
            torch.tensor([[2, 0], [1, 3], [0, 2], [3, 1]], dtype=torch.int32), 4], {}, [])
    yield ("NPU.npu_moe_compute_expert_tokens.0", C.npu_moe_compute_expert_tokens, [torch.tensor([0, 0, 1, 2, 2, 3, 3, 3], dtype=torch.int32), 4], {}, [])
    yield ("NPU.npu_moe_finalize_routing.0", C.npu_moe_finalize_routing,
           [rand(g, 8, 6), rand(g, 4, 6), rand(g, 4, 6), rand(g, 4, 6), rand(g, 4, 2), torch.tensor([1, 7, 0, 4, 6, 2, 5, 3], dtype=torch.int32),
            torch.tensor([[2, 0], [1, 3], [0, 2], [3, 1]], dtype=torch.int32)], {}, [])
    yield from inference_calls(g)
    yield from spelling_calls(g)


def i32(*values):
    return torch.tensor(values, dtype=torch.int32)


def inference_calls(g):
    """The inference, routing, activation and detection kernels (runtime/src/ops/npu_infer.rs,
    npu_moe.rs, npu_route.rs, npu_logits.rs, npu_act.rs, npu_boxes.rs), after the calls above so
    that their draws stay as they were."""
    triu = torch.ones(4, 4, dtype=torch.bool).triu(1)
    yield ("NPU.npu_prompt_flash_attention.0", C.npu_prompt_flash_attention, [rand(g, 2, 4, 16), rand(g, 2, 4, 16), rand(g, 2, 4, 16)],
           {"num_heads": 2, "scale_value": 0.35, "input_layout": "BSH"}, [])
    yield ("NPU.npu_incre_flash_attention.0", C.npu_incre_flash_attention, [rand(g, 2, 1, 32), rand(g, 2, 5, 16), rand(g, 2, 5, 16)],
           {"num_heads": 4, "scale_value": 0.25, "num_key_value_heads": 2}, [])
    yield ("NPU.npu_fused_infer_attention_score.0", C.npu_fused_infer_attention_score, [rand(g, 2, 2, 4, 8), rand(g, 2, 2, 4, 8), rand(g, 2, 2, 4, 8)],
           {"num_heads": 2, "scale": 0.35, "input_layout": "BNSD", "atten_mask": triu, "sparse_mode": 1, "softmax_lse_flag": True}, [])
    yield ("NPU.npu_fused_infer_attention_score_v2.0", C.npu_fused_infer_attention_score_v2, [rand(g, 2, 1, 32), rand(g, 2, 5, 16), rand(g, 2, 5, 16)],
           {"num_query_heads": 4, "num_key_value_heads": 2, "softmax_scale": 0.25}, [])
    yield ("NPU.npu_fusion_attention_v3.0", C.npu_fusion_attention_v3, [rand(g, 2, 3, 8), rand(g, 2, 3, 8), rand(g, 2, 3, 8), 2, "BSH"], {"scale": 0.4},
           [torch.empty(0), torch.tensor([1234]), torch.tensor([0])])
    yield ("NPU.npu_add_rms_norm_v2.0", C.npu_add_rms_norm_v2, [rand(g, 2, 3, 8), rand(g, 2, 3, 8), rand(g, 8, low=0.5, high=1.5)], {}, [])
    yield ("NPU.npu_apply_rotary_pos_emb.0", C.npu_apply_rotary_pos_emb, [rand(g, 2, 3, 4, 8), rand(g, 2, 3, 2, 8), rand(g, 2, 3, 1, 8), rand(g, 2, 3, 1, 8)], {}, [])
    yield ("NPU.npu_transpose_batchmatmul.0", C.npu_transpose_batchmatmul, [rand(g, 3, 2, 4), rand(g, 3, 4, 5)], {}, [])
    yield ("NPU.npu_fused_matmul.0", C.npu_fused_matmul, [rand(g, 2, 3, 4), rand(g, 4, 5)], {"bias": rand(g, 5), "fused_op_type": "gelu_tanh"}, [])
    yield ("NPU.npu_moe_gating_top_k.0", C.npu_moe_gating_top_k, [rand(g, 4, 8), 2], {"norm_type": 1}, [])
    yield ("NPU.npu_moe_init_routing_v2.0", C.npu_moe_init_routing_v2, [rand(g, 4, 3), i32([2, 0], [1, 2], [0, 2], [3, 1])],
           {"scale": rand(g, 4), "expert_num": 4, "expert_tokens_num_flag": True}, [])
    experts = torch.tensor([[1, 0], [2, 1], [0, 2], [1, 1], [2, 0]])
    yield ("NPU.npu_moe_token_permute.0", C.npu_moe_token_permute, [rand(g, 5, 6), experts], {}, [])
    yield ("NPU.npu_moe_token_unpermute.0", C.npu_moe_token_unpermute, [rand(g, 10, 6), i32(3, 0, 7, 4, 1, 8, 5, 6, 9, 2), rand(g, 5, 2)], {}, [])
    routing = torch.tensor([[1, 0, 1], [0, 1, 1], [1, 1, 0], [1, 0, 1]], dtype=torch.bool)
    yield ("NPU.npu_moe_token_permute_with_routing_map.0", C.npu_moe_token_permute_with_routing_map, [rand(g, 4, 6), routing],
           {"probs": rand(g, 4, 3), "num_out_tokens": 8}, [])
    yield ("NPU.npu_moe_re_routing.0", C.npu_moe_re_routing, [rand(g, 7, 6), i32([1, 2], [3, 1])], {"per_token_scales": rand(g, 7)}, [])
    yield ("NPU.npu_gather_sparse_index.0", C.npu_gather_sparse_index, [rand(g, 5, 6), torch.tensor([[0, 4], [2, 2]])], {}, [])
    yield ("NPU.npu_top_k_top_p.0", C.npu_top_k_top_p, [rand(g, 3, 8)], {"p": torch.tensor([0.5, 0.9, 0.2]), "k": i32(3, 0, 8)}, [])
    yield ("NPU.npu_cross_entropy_loss.0", C.npu_cross_entropy_loss, [rand(g, 5, 4), torch.tensor([0, 3, 1, 1, 2])], {"label_smoothing": 0.1}, [])
    yield ("NPU.npu_fused_add_topk_div.0", C.npu_fused_add_topk_div, [rand(g, 3, 16), rand(g, 16, low=-0.1, high=0.1)],
           {"group_num": 4, "group_topk": 2, "n": 2, "k": 4}, [])
    yield ("NPU.npu_interleave_rope.0", C.npu_interleave_rope, [rand(g, 2, 2, 3, 8), rand(g, 2, 1, 3, 8), rand(g, 2, 1, 3, 8)], {}, [])
    yield ("NPU.npu_mrope.0", C.npu_mrope, [torch.tensor([[0, 1, 2, 3], [3, 2, 1, 0], [5, 5, 4, 4]]), rand(g, 4, 16), rand(g, 4, 8), rand(g, 6, 8), 8],
           {"mrope_section": [1, 1, 2]}, [])
    yield ("NPU.npu_gelu_mul.0", C.npu_gelu_mul, [rand(g, 3, 8)], {}, [])
    yield ("NPU.npu_clipped_swiglu.0", C.npu_clipped_swiglu, [rand(g, 3, 8, low=-9.0, high=9.0)], {}, [])
    yield ("NPU.npu_group_norm_swish.0", C.npu_group_norm_swish, [rand(g, 2, 4, 3), 2, rand(g, 4), rand(g, 4)], {"swish_scale": 1.5}, [])
    yield ("NPU.npu_normalize_batch.0", C.npu_normalize_batch, [rand(g, 2, 3, 5), i32(5, 3)], {}, [])
    yield ("NPU.npu_stride_add.0", C.npu_stride_add, [rand(g, 1, 3, 2, 2), rand(g, 1, 20, 2, 2), 0, 1, 1], {}, [])
    yield ("NPU.npu_ffn.0", C.npu_ffn, [rand(g, 5, 4), rand(g, 4, 6), rand(g, 6, 4), "relu"], {"bias1": rand(g, 6), "bias2": rand(g, 4)}, [])
    yield ("NPU.npu_scatter.0", C.npu_scatter, [rand(g, 2, 3, 4), i32([2, 0, 1, 1], [0, 2, 2, 1]), rand(g, 2, 4), 1], {}, [])
    yield ("NPU.npu_convert_weight_to_int4pack.0", C.npu_convert_weight_to_int4pack,
           [i32([-8, -1, 0, 1, 7, 3, -4, 2, 5, 6, -7, -2, 4, 0, 1, -3], [7] * 8 + [-8] * 8)], {}, [])
    yield ("NPU.npu_giou.0", C.npu_giou, [rand(g, 4, 5, low=0.5, high=3.0), rand(g, 4, 5, low=0.5, high=3.0), True], {}, [])
    yield ("NPU.npu_diou.0", C.npu_diou, [rand(g, 4, 5, low=0.5, high=3.0), rand(g, 4, 5, low=0.5, high=3.0), True], {}, [])
    yield ("NPU.npu_ciou.0", C.npu_ciou, [rand(g, 4, 5, low=0.5, high=3.0), rand(g, 4, 5, low=0.5, high=3.0), True, False], {}, [])
    yield ("NPU.npu_yolo_boxes_encode.0", C.npu_yolo_boxes_encode,
           [torch.tensor([[0.0, 0, 4, 3], [1, 2, 5, 9], [3, 3, 4, 6]]), torch.tensor([[1.0, 0.5, 3, 4], [0, 1, 7, 8], [3.5, 2, 3.6, 7]]), i32(2, 8, 4)], {}, [])
    rot = torch.tensor([[[0.0, 2, 1], [1, 0, 3], [4, 5, 1.5], [3, 4, 6], [30, -45, 10]]])
    yield ("NPU.npu_rotated_box_encode.0", C.npu_rotated_box_encode, [rot, torch.tensor([[[0.5, 1, 2], [1.5, 0.5, 2], [5, 4, 6], [4, 6, 3], [20, -30, 60]]]),
                                                                      torch.tensor([10.0, 10, 5, 5, 1])], {}, [])
    yield ("NPU.npu_rotated_box_decode.0", C.npu_rotated_box_decode, [rot, rand(g, 1, 5, 3, low=-0.5, high=0.5), torch.tensor([1.0, 2, 1, 2, 1])], {}, [])
    yield ("NPU.npu_anchor_response_flags.0", C.npu_anchor_response_flags, [torch.tensor([[1.0, 2, 10, 8], [20, 5, 28, 30]]), [4, 5], [8, 8], 3], {}, [])
    overlaps = torch.tensor([[0.1, 0.6, 0.3, 0.2, 0.05], [0.7, 0.2, 0.3, 0.2, 0.4], [0.2, 0.1, 0.3, 0.05, 0.4]])
    yield ("NPU.npu_grid_assign_positive.0", C.npu_grid_assign_positive,
           [torch.tensor([0.0, -1, 0, -1, 0]), overlaps, torch.tensor([1, 1, 0, 1, 1], dtype=torch.uint8), overlaps.max(0).values,
            overlaps.argmax(0).int(), overlaps.max(1).values, overlaps.argmax(1).int(), 3, 0.5, 0.1, True], {}, [])
    rois = torch.tensor([[0, -2, -2, 22, 22], [1, 1, 2, 14, 18.5]])
    yield ("NPU.npu_roi_align.0", C.npu_roi_align, [rand(g, 2, 3, 6, 6), rois, 0.25, 3, 2, 2, 0], {}, [])
    yield ("NPU.npu_roi_alignbk.0", C.npu_roi_alignbk, [rand(g, 2, 3, 3, 2), rois, [2, 3, 6, 6], 2, 3, 0.25, 2], {}, [])


def spelling_calls(g):
    """torch_npu's spellings of torch functions and its small kernels (runtime/src/ops/npu_torch.rs,
    npu_infer.rs), after the calls above so that their draws stay as they were."""
    yield ("NPU.npu_conv2d.0", C.npu_conv2d, [rand(g, 2, 3, 6, 6), rand(g, 4, 3, 3, 3), rand(g, 4), [1, 1], [1, 1], [1, 1], 1], {}, [])
    yield ("NPU.npu_conv3d.0", C.npu_conv3d, [rand(g, 1, 2, 4, 4, 4), rand(g, 3, 2, 2, 2, 2), rand(g, 3), [1, 1, 1], [0, 0, 0], [1, 1, 1], 1], {}, [])
    yield ("NPU.npu_convolution.0", C.npu_convolution, [rand(g, 2, 4, 5, 5), rand(g, 4, 2, 3, 3), rand(g, 4), [2, 2], [1, 0], [1, 1], 2], {}, [])
    yield ("NPU.npu_conv_transpose2d.0", C.npu_conv_transpose2d, [rand(g, 2, 3, 4, 4), rand(g, 3, 2, 3, 3), rand(g, 2), [1, 1], [1, 0], [2, 2], [1, 1], 1],
           {}, [])
    yield ("NPU.npu_convolution_transpose.0", C.npu_conv_transpose2d,
           [rand(g, 1, 2, 3, 3, 3), rand(g, 2, 2, 2, 2, 2), None, [0, 0, 0], [0, 0, 0], [1, 1, 1], [1, 1, 1], 1], {}, [])
    yield ("NPU.npu_silu.0", C.npu_silu, [rand(g, 3, 4)], {}, [])
    yield ("NPU.fast_gelu.0", C.npu_fast_gelu, [rand(g, 4, 5, low=-4.0, high=4.0)], {}, [])
    yield ("NPU.npu_broadcast.0", C.npu_broadcast, [rand(g, 3, 1), [2, 3, 4]], {}, [])
    yield ("NPU.npu_transpose.0", C.npu_transpose, [rand(g, 2, 3, 4), [2, 0, 1]], {}, [])
    yield ("NPU.npu_reshape.0", C.npu_reshape, [rand(g, 2, 3, 4), [4, 6]], {}, [])
    yield ("NPU.npu_slice.0", C.npu_slice, [rand(g, 4, 5), [1, 2], [2, 3]], {}, [])
    yield ("NPU.npu_indexing.0", C.npu_indexing, [rand(g, 4, 6), [1, 1], [3, 5], [1, 3]], {"begin_mask": 1, "end_mask": 2}, [])
    yield ("NPU.npu_max.0", C.npu_max, [rand(g, 3, 5), 1], {}, [])
    yield ("NPU.npu_min.0", C.npu_min, [rand(g, 3, 5), -1], {}, [])
    yield ("NPU.npu_softmax_cross_entropy_with_logits.0", C.npu_softmax_cross_entropy_with_logits, [rand(g, 4, 6), rand(g, 4, 6, low=0.0, high=1.0)], {}, [])
    yield ("NPU.npu_pad.0", C.npu_pad, [rand(g, 2, 3, 2), [0, 1, 0, 0, 2, 2]], {}, [])
    yield ("NPU.npu_format_cast_.0", C.npu_format_cast, [rand(g, 2, 3), 2], {}, [])
    yield ("NPU.one_.0", C.one_, [rand(g, 2, 3)], {}, [])
    yield ("NPU.empty_with_format.0", C.empty_with_format, [[2, 3]], {"dtype": torch.float32}, [])
    yield ("NPU.npu_one_hot.0", C.npu_one_hot, [i32([2, 0], [1, 1]), -1, 3, 2.5, -1.0], {}, [])
    yield ("NPU.npu_anti_quant.0", C.npu_anti_quant, [torch.randint(-128, 128, (3, 4), generator=g, dtype=torch.int8), rand(g, 4, low=0.1, high=2.0)],
           {"offset": rand(g, 4), "dst_dtype": torch.float32}, [])
    yield ("NPU.npu_scatter_nd_update.0", C.npu_scatter_nd_update, [rand(g, 3, 4), i32([0, 1], [2, 3]), rand(g, 2)], {}, [])
    yield ("NPU.npu_scatter_nd_update_.0", C.npu_scatter_nd_update, [rand(g, 4, 3), torch.tensor([[2], [0]]), rand(g, 2, 3)], {}, [])
    yield ("NPU.scatter_update.0", C.scatter_update, [rand(g, 3, 2, 5, 4), torch.tensor([[2, 0], [0, 3]]), rand(g, 2, 2, 2, 4), -2], {}, [])
    yield ("NPU.scatter_update_.0", C.scatter_update, [rand(g, 2, 6, 3), torch.tensor([1, 3]), rand(g, 2, 2, 3), 1], {}, [])
    rois = torch.tensor([[1.0, 2, 3, 4], [3, 4, 5, 6], [0, 1, 8, 5]])
    yield ("NPU.npu_bounding_box_encode.0", C.npu_bounding_box_encode,
           [rois, torch.tensor([[5.0, 6, 7, 8], [7, 8, 9, 7], [1, 0, 6, 6]]), 0.0, 0.0, 0.0, 0.0, 0.1, 0.1, 0.2, 0.2], {}, [])
    yield ("NPU.npu_bounding_box_decode.0", C.npu_bounding_box_decode,
           [rois, rand(g, 3, 4, low=-1.0, high=1.0), 0.0, 0.1, 0.0, -0.1, 1.0, 1.0, 0.5, 0.5, [10, 8], 0.1], {}, [])
    yield ("NPU.npu_attention_update.0", C.npu_attention_update, [[rand(g, 6), rand(g, 6), rand(g, 6)], [rand(g, 6, 4), rand(g, 6, 4), rand(g, 6, 4)], 1],
           {}, [])
    yield ("NPU.npu_grouped_matmul_add_.0", C.npu_grouped_matmul_add_, [rand(g, 3, 4, 5), rand(g, 7, 4), rand(g, 7, 5), torch.tensor([2, 5, 7])], {}, [])
    yield ("NPU.npu_sign_bits_pack.0", C.npu_sign_bits_pack, [torch.tensor([5.0, 4, 3, 2, 0, -1, -2, 4, 3, 2, 1, 0, -1, -2]), 2], {}, [])
    yield ("NPU.npu_sign_bits_unpack.0", C.npu_sign_bits_unpack, [torch.tensor([159, 15, 0, 255], dtype=torch.uint8), 2, torch.float32], {}, [])
    yield ("NPU.npu_masked_fill_range.0", C.npu_masked_fill_range,
           [rand(g, 3, 2, 6), i32([0, 2, 1], [3, 4, 0]), i32([2, 5, 6], [6, 6, 3]), torch.tensor([9.0, -9.0])], {}, [])


# Calls whose kernels torch_npu differentiates; the others (inference kernels) have forward entries only.
DIFFERENTIATED = {"NPU.npu_fusion_attention_v3.0", "NPU.npu_moe_token_permute.0", "NPU.npu_moe_token_unpermute.0",
                  "NPU.npu_moe_token_permute_with_routing_map.0", "NPU.npu_gather_sparse_index.0", "NPU.npu_cross_entropy_loss.0",
                  "NPU.npu_group_norm_swish.0", "NPU.npu_giou.0", "NPU.npu_diou.0", "NPU.npu_conv2d.0", "NPU.npu_conv3d.0",
                  "NPU.npu_convolution.0", "NPU.npu_conv_transpose2d.0", "NPU.npu_convolution_transpose.0", "NPU.npu_silu.0", "NPU.fast_gelu.0",
                  "NPU.npu_broadcast.0", "NPU.npu_transpose.0", "NPU.npu_reshape.0", "NPU.npu_slice.0", "NPU.npu_indexing.0", "NPU.npu_max.0",
                  "NPU.npu_min.0", "NPU.npu_softmax_cross_entropy_with_logits.0", "NPU.npu_pad.0"}
FORWARD_ONLY = {"NPU.npu_moe_init_routing.0", "NPU.npu_moe_compute_expert_tokens.0", "NPU.npu_moe_finalize_routing.0"}


# Where each planted error goes: (key, "forward.output.<i>" or
# "backward.output.<i>", element, shift): the element moves by shift·max|t|.
PLANTED = [
    ("NPU.npu_fusion_attention.0", "forward.output.0", 5, 0.02),
    ("NPU.npu_fusion_attention.1", "backward.output.0", 3, 0.5),
    ("NPU.npu_fusion_attention.2", "forward.output.1", 0, 0.25),
    ("NPU.npu_rms_norm.0", "forward.output.0", 7, 0.01),
    ("NPU.npu_swiglu.0", "backward.output.0", 2, 0.05),
    ("NPU.npu_fast_gelu.0", "forward.output.0", 4, 0.1),
    ("NPU.npu_mish.0", "backward.output.0", 1, 1.0),
    ("NPU.npu_rotary_mul.0", "backward.output.1", 0, 0.5),
    ("NPU.npu_scaled_masked_softmax.0", "forward.output.0", 1, 0.2),
    ("NPU.npu_add_rms_norm.0", "forward.output.0", 5, 0.01),
    ("NPU.npu_geglu.0", "backward.output.0", 3, 0.05),
    ("NPU.npu_gelu.0", "forward.output.0", 2, 0.05),
    ("NPU.npu_bmmV2.0", "backward.output.1", 4, 0.05),
    ("NPU.npu_dtype_cast.0", "forward.output.0", 0, 0.01),
    ("NPU.npu_format_cast.0", "forward.output.0", 6, 0.001),
    ("NPU.npu_grouped_matmul.0", "forward.output.0", 9, 0.02),
    ("NPU.npu_moe_init_routing.0", "forward.output.0", 7, 0.05),
    ("NPU.npu_moe_finalize_routing.0", "forward.output.0", 11, 0.02),
    ("NPU.npu_prompt_flash_attention.0", "forward.output.0", 3, 0.02),
    ("NPU.npu_incre_flash_attention.0", "forward.output.0", 7, 0.02),
    ("NPU.npu_fused_infer_attention_score.0", "forward.output.1", 2, 0.05),
    ("NPU.npu_fused_infer_attention_score_v2.0", "forward.output.0", 5, 0.02),
    ("NPU.npu_fusion_attention_v3.0", "backward.output.2", 4, 0.05),
    ("NPU.npu_add_rms_norm_v2.0", "forward.output.0", 1, 0.02),
    ("NPU.npu_apply_rotary_pos_emb.0", "forward.output.1", 6, 0.05),
    ("NPU.npu_transpose_batchmatmul.0", "forward.output.0", 8, 0.02),
    ("NPU.npu_fused_matmul.0", "forward.output.0", 3, 0.02),
    ("NPU.npu_moe_gating_top_k.0", "forward.output.0", 1, 0.05),
    ("NPU.npu_moe_init_routing_v2.0", "forward.output.0", 4, 0.05),
    ("NPU.npu_moe_token_permute.0", "forward.output.0", 9, 0.05),
    ("NPU.npu_moe_token_unpermute.0", "backward.output.1", 3, 0.05),
    ("NPU.npu_moe_token_permute_with_routing_map.0", "forward.output.1", 2, 0.05),
    ("NPU.npu_moe_re_routing.0", "forward.output.0", 10, 0.05),
    ("NPU.npu_gather_sparse_index.0", "backward.output.0", 5, 0.05),
    ("NPU.npu_top_k_top_p.0", "forward.output.0", 0, 0.05),
    ("NPU.npu_cross_entropy_loss.0", "forward.output.1", 6, 0.02),
    ("NPU.npu_fused_add_topk_div.0", "forward.output.0", 5, 0.02),
    ("NPU.npu_interleave_rope.0", "forward.output.0", 11, 0.02),
    ("NPU.npu_mrope.0", "forward.output.1", 9, 0.02),
    ("NPU.npu_gelu_mul.0", "forward.output.0", 4, 0.02),
    ("NPU.npu_clipped_swiglu.0", "forward.output.0", 2, 0.02),
    ("NPU.npu_group_norm_swish.0", "backward.output.0", 7, 0.05),
    ("NPU.npu_normalize_batch.0", "forward.output.0", 12, 0.02),
    ("NPU.npu_stride_add.0", "forward.output.0", 9, 0.02),
    ("NPU.npu_ffn.0", "forward.output.0", 6, 0.02),
    ("NPU.npu_scatter.0", "forward.output.0", 10, 0.05),
    ("NPU.npu_giou.0", "backward.output.1", 3, 0.05),
    ("NPU.npu_diou.0", "forward.output.0", 2, 0.05),
    ("NPU.npu_ciou.0", "forward.output.0", 1, 0.05),
    ("NPU.npu_yolo_boxes_encode.0", "forward.output.0", 5, 0.02),
    ("NPU.npu_rotated_box_encode.0", "forward.output.0", 4, 0.02),
    ("NPU.npu_rotated_box_decode.0", "forward.output.0", 8, 0.02),
    ("NPU.npu_grid_assign_positive.0", "forward.output.0", 2, 0.5),
    ("NPU.npu_roi_align.0", "forward.output.0", 13, 0.02),
    ("NPU.npu_roi_alignbk.0", "forward.output.0", 21, 0.02),
    ("NPU.npu_conv2d.0", "forward.output.0", 17, 0.02),
    ("NPU.npu_conv3d.0", "backward.output.1", 5, 0.05),
    ("NPU.npu_convolution.0", "forward.output.0", 3, 0.02),
    ("NPU.npu_conv_transpose2d.0", "backward.output.0", 9, 0.05),
    ("NPU.npu_convolution_transpose.0", "forward.output.0", 12, 0.02),
    ("NPU.npu_silu.0", "forward.output.0", 5, 0.02),
    ("NPU.fast_gelu.0", "backward.output.0", 6, 0.05),
    ("NPU.npu_broadcast.0", "forward.output.0", 13, 0.01),
    ("NPU.npu_transpose.0", "backward.output.0", 7, 0.01),
    ("NPU.npu_reshape.0", "forward.output.0", 20, 0.01),
    ("NPU.npu_slice.0", "forward.output.0", 3, 0.01),
    ("NPU.npu_indexing.0", "backward.output.0", 9, 0.05),
    ("NPU.npu_max.0", "forward.output.0", 1, 0.02),
    ("NPU.npu_min.0", "backward.output.0", 4, 0.05),
    ("NPU.npu_softmax_cross_entropy_with_logits.0", "forward.output.0", 2, 0.02),
    ("NPU.npu_pad.0", "forward.output.0", 10, 0.01),
    ("NPU.npu_format_cast_.0", "forward.output.0", 4, 0.001),
    ("NPU.one_.0", "forward.output.0", 2, 0.5),
    ("NPU.npu_one_hot.0", "forward.output.0", 3, 0.5),
    ("NPU.npu_anti_quant.0", "forward.output.0", 7, 0.02),
    ("NPU.npu_scatter_nd_update.0", "forward.output.0", 3, 0.02),
    ("NPU.npu_scatter_nd_update_.0", "forward.output.0", 6, 0.02),
    ("NPU.scatter_update.0", "forward.output.0", 30, 0.02),
    ("NPU.scatter_update_.0", "forward.output.0", 11, 0.02),
    ("NPU.npu_bounding_box_encode.0", "forward.output.0", 5, 0.02),
    ("NPU.npu_bounding_box_decode.0", "forward.output.0", 2, 0.02),
    ("NPU.npu_attention_update.0", "forward.output.0", 9, 0.02),
    ("NPU.npu_grouped_matmul_add_.0", "forward.output.0", 14, 0.02),
    ("NPU.npu_sign_bits_pack.0", "forward.output.0", 1, 0.5),
    ("NPU.npu_sign_bits_unpack.0", "forward.output.0", 5, 1.0),
    ("NPU.npu_masked_fill_range.0", "forward.output.0", 8, 0.02),
]


# The kernels of the first calls, differentiated unless FORWARD_ONLY.
ORIGINAL = {"npu_fusion_attention", "npu_rms_norm", "npu_swiglu", "npu_fast_gelu", "npu_mish", "npu_rotary_mul", "npu_scaled_masked_softmax",
            "npu_add_rms_norm", "npu_geglu", "npu_gelu", "npu_bmmV2", "npu_dtype_cast", "npu_format_cast", "npu_grouped_matmul"}


def record_call(dump, g, key, f, args, kwargs, extra):
    """Runs one call of calls() forward and backward (output gradients drawn from g) into dump;
    forward only for FORWARD_ONLY."""
    backward = key in DIFFERENTIATED or (key not in FORWARD_ONLY and key.split(".")[1] in ORIGINAL)

    def leaf(a):
        if isinstance(a, list):
            return [leaf(x) for x in a]
        return a.requires_grad_(backward) if isinstance(a, torch.Tensor) and a.is_floating_point() else a

    def detach(a):
        if isinstance(a, list):
            return [detach(x) for x in a]
        return a.detach() if isinstance(a, torch.Tensor) else a

    leaves = [leaf(a) for a in args]
    result = f(*leaves, **kwargs)
    outputs = [result] if isinstance(result, torch.Tensor) else list(result)
    # A float64 result (npu_dtype_cast's bench values) is recorded as the device's float32.
    outputs = [o.float() if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in outputs]
    if not backward:
        dump.call(key, [detach(a) for a in args], kwargs, [detach(o) for o in outputs], extra, [], None)
        return
    if "keep_prob" in kwargs:
        # No dropout here: the recorded output stands for a device that drew one.
        outputs[0] = outputs[0] * (torch.rand(outputs[0].shape, generator=g) < 0.9) / 0.9
    diff = [t for a in leaves for t in (a if isinstance(a, list) else [a]) if isinstance(t, torch.Tensor) and t.requires_grad]
    gy = [torch.randn(o.shape, generator=g) if isinstance(o, torch.Tensor) and o.requires_grad else None for o in outputs]
    pairs = [(o, d) for o, d in zip(outputs, gy) if d is not None]
    grads = torch.autograd.grad([o for o, _ in pairs], diff, [d for _, d in pairs])
    dump.call(key, [detach(a) for a in args], kwargs, [detach(o) for o in outputs], extra, gy + [None] * len(extra[:1]), list(grads))


def record(out):
    clean = Dump(out / "clean")
    torch.manual_seed(SEED)
    g = torch.Generator().manual_seed(SEED + 1)
    for key, f, args, kwargs, extra in calls():
        record_call(clean, g, key, f, args, kwargs, extra)
    clean.write()
    planted = out / "planted"
    shutil.copytree(out / "clean", planted)
    for key, where, element, shift in PLANTED:
        path = planted / "dump_tensor_data" / f"{key}.{where}.pt"
        t = torch.load(path)
        delta = shift * t.abs().max()
        # An integer output (sign_bits_pack's bytes) moves by a whole number, at least 1.
        t.view(-1)[element] += delta if t.is_floating_point() else max(1, int(delta))
        torch.save(t, path)
    dump = json.loads((planted / "dump.json").read_text())
    for key, where, _, _ in PLANTED:
        direction, _, index = where.split(".")
        entry = dump["data"][f"{key}.{direction}"]
        tensor = entry["output"][int(index)]
        tensor.update(stats(torch.load(planted / "dump_tensor_data" / tensor["data_name"])))
    (planted / "dump.json").write_text(json.dumps(dump, indent=1) + "\n")
    (planted / "planted.json").write_text(json.dumps([{"key": k, "where": w, "element": e, "shift": f} for k, w, e, f in PLANTED], indent=1) + "\n")


def bf16_calls():
    """(key, composition, args, kwargs): the bfloat16 calls (inputs exact in bfloat16)."""
    g = torch.Generator().manual_seed(SEED + 2)

    def b(*shape, low=-2.0, high=2.0):
        return rand(g, *shape, low=low, high=high).bfloat16()
    yield ("NPU.npu_rms_norm.0", C.npu_rms_norm, [b(4, 6, 32), b(32, low=0.5, high=1.5)], {"epsilon": 1e-6})
    yield ("NPU.npu_swiglu.0", C.npu_swiglu, [b(4, 6, 40)], {"dim": -1})
    yield ("NPU.npu_fast_gelu.0", C.npu_fast_gelu, [b(8, 24, low=-4.0, high=4.0)], {})
    yield ("NPU.npu_rotary_mul.0", C.npu_rotary_mul, [b(2, 6, 4, 16), b(1, 6, 1, 16), b(1, 6, 1, 16)], {})
    yield ("NPU.npu_scaled_masked_softmax.0", C.npu_scaled_masked_softmax, [b(2, 2, 8, 12), torch.rand(2, 1, 8, 12, generator=g) < 0.3],
           {"scale": 0.5})


def record_bf16(out):
    """bf16_clean/ and bf16_scaled/ (module docstring)."""
    clean = Dump(out / "bf16_clean")
    g = torch.Generator().manual_seed(SEED + 3)
    for key, f, args, kwargs in bf16_calls():
        # The device: float32 arithmetic on the bfloat16 inputs, one rounding into bfloat16.
        leaves = [a.float().requires_grad_(True) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
        result = f(*leaves, **kwargs)
        outputs = [result] if isinstance(result, torch.Tensor) else list(result)
        # Output 0 in the inputs' dtype; npu_rms_norm's rstd stays float32, as torch_npu returns it.
        like = [torch.bfloat16] + [torch.float32] * (len(outputs) - 1)
        gy = [torch.randn(o.shape, generator=g).to(d) if o.requires_grad else None for o, d in zip(outputs, like)]
        diff = [a for a in leaves if isinstance(a, torch.Tensor) and a.requires_grad]
        pairs = [(o, d.float()) for o, d in zip(outputs, gy) if d is not None]
        grads = torch.autograd.grad([o for o, _ in pairs], diff, [d for _, d in pairs])
        clean.call(key, list(args), kwargs, [o.detach().to(d) for o, d in zip(outputs, like)], [], gy, [d.bfloat16() for d in grads])
    clean.write()
    scaled = out / "bf16_scaled"
    shutil.copytree(out / "bf16_clean", scaled)
    dump = json.loads((scaled / "dump.json").read_text())
    for key, entry in dump["data"].items():
        if key.endswith(".forward"):
            tensor = entry["output"][0]
            path = scaled / "dump_tensor_data" / tensor["data_name"]
            t = (torch.load(path).double() * 1.02).bfloat16()
            torch.save(t, path)
            tensor.update(stats(t))
    (scaled / "dump.json").write_text(json.dumps(dump, indent=1) + "\n")


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "tests" / "fixtures" / "npu"
    for sub in ("clean", "planted", "bf16_clean", "bf16_scaled"):
        shutil.rmtree(out / sub, ignore_errors=True)
    record(out)
    record_bf16(out)
    print(f"wrote {out}/clean, {out}/planted, {out}/bf16_clean and {out}/bf16_scaled")


if __name__ == "__main__":
    main()
