"""Writes Megatron-LM checkpoint folders of a small GPT with real torch, for
tests/checkpoint_compare.rs and scripts/bench-checkpoint-compare.sh.

    make_checkpoints.py OUT [--tp T] [--pp P] [--vpp V] [--hidden H] [--layers L]
                            [--vocab N] [--dtype bf16|fp32] [--seed S] [--perturb NAME]
                            [--iteration I] [--no-full] [--expected OTHER_FULL.pt]
                            [--user-objects] [--tensor-subclass NAME]

OUT gets `latest_checkpointed_iteration.txt` and
`iter_XXXXXXX/mp_rank_XX[_XXX]/model_optim_rng.pt`, laid out and named as
Megatron core with Transformer Engine saves them (fused
`linear_qkv.layer_norm_weight`, `_extra_state` as io.BytesIO), each file a
realistic `model_optim_rng.pt`: 'args' (argparse.Namespace with a
megatron.core.enums.ModelType enum and torch.bfloat16), 'checkpoint_version',
'iteration', 'model' (or 'model0', 'model1' with --vpp), 'optimizer',
'rng_state' (python, numpy and torch RNG state). The full (unsharded) state
dict is saved as OUT/full.pt (not with --no-full). With --perturb NAME, 1.5 is added to the
first element of NAME (a full-model name) and 0.25 to every element of its
last row. With --expected OTHER, prints {name: {l2, cos, numel, shape}} of
OUT's full state dict against OTHER's, computed with numpy in float64 from
the float32 values, as a JSON list of [mapped name, metrics] in model order.
With --user-objects, objects of classes no checkpoint reader knows are added
outside the tensors, as a training script's own classes end up there: in
'args' a RunConfig and a Schedule enum defined in this script (pickled as
`__main__.RunConfig`, `__main__.Schedule`) and the standard library's
http.HTTPStatus.OK, in 'optimizer' and 'rng_state' a `__main__.LossScaler`,
and each model state dict is a `__main__.StateDict` (a dict subclass).
With --tensor-subclass NAME, parameter NAME (a rank file's name) is saved as
a `__main__.TaggedTensor`, a torch.Tensor subclass defined here.
"""
import argparse
import enum
import http
import io
import json
import os
import random
import sys
import types

import numpy as np
import torch

for name in ["megatron", "megatron.core", "megatron.core.enums"]:
    sys.modules.setdefault(name, types.ModuleType(name))


class ModelType(enum.Enum):
    encoder_or_decoder = 1
    encoder_and_decoder = 2


ModelType.__module__ = "megatron.core.enums"
ModelType.__qualname__ = "ModelType"
sys.modules["megatron.core.enums"].ModelType = ModelType


class RunConfig:
    """A training script's own configuration object."""

    def __init__(self, micro_batches, note):
        self.micro_batches = micro_batches
        self.note = note


class Schedule(enum.Enum):
    cosine = 1
    linear = 2


class LossScaler:
    def __init__(self):
        self.scale = 65536.0
        self.growth_tracker = 3


class StateDict(dict):
    """A training script's own mapping holding a state dict."""


class TaggedTensor(torch.Tensor):
    pass


def full_model(h, layers, vocab, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape: (torch.randn(*shape, generator=g) * 0.5).to(dtype)
    sd = {"embedding.word_embeddings.weight": r(vocab, h)}
    for i in range(layers):
        p = f"decoder.layers.{i}."
        sd[p + "self_attention.linear_qkv.layer_norm_weight"] = (1 + r(h)).to(dtype)
        sd[p + "self_attention.linear_qkv.weight"] = r(3 * h, h)
        sd[p + "self_attention.linear_qkv.bias"] = r(3 * h)
        sd[p + "self_attention.linear_proj.weight"] = r(h, h)
        sd[p + "self_attention.linear_proj.bias"] = r(h)
        sd[p + "mlp.linear_fc1.layer_norm_weight"] = (1 + r(h)).to(dtype)
        sd[p + "mlp.linear_fc1.weight"] = r(4 * h, h)
        sd[p + "mlp.linear_fc2.weight"] = r(h, 4 * h)
        sd[p + "mlp.linear_fc2.bias"] = r(h)
    sd["decoder.final_layernorm.weight"] = (1 + r(h)).to(dtype)
    sd["output_layer.weight"] = r(vocab, h)
    return sd


AXIS0 = ("linear_qkv.weight", "linear_qkv.bias", "linear_fc1.weight", "word_embeddings.weight", "output_layer.weight")
AXIS1 = ("linear_fc2.weight", "linear_proj.weight")


def shard(name, t, tp, rank):
    if any(k in name for k in AXIS0):
        return t.chunk(tp, 0)[rank].clone()
    if any(k in name for k in AXIS1):
        return t.chunk(tp, 1)[rank].clone()
    return t.clone()


def chunk_state(full, layers, chunk, nchunks, first, last, tp, rank):
    """The state dict of model chunk `chunk` (of `nchunks`, in layer order) on TP rank `rank`."""
    per = layers // nchunks
    sd = {}
    if first:
        sd["embedding.word_embeddings.weight"] = shard("word_embeddings.weight", full["embedding.word_embeddings.weight"], tp, rank)
    for local in range(per):
        g = chunk * per + local
        for name, t in full.items():
            if name.startswith(f"decoder.layers.{g}."):
                local_name = name.replace(f"decoder.layers.{g}.", f"decoder.layers.{local}.", 1)
                sd[local_name] = shard(name, t, tp, rank)
                if name.endswith("linear_qkv.weight"):
                    sd[local_name.replace(".weight", "._extra_state")] = io.BytesIO(b"te-fp8-meta")
    if last:
        sd["decoder.final_layernorm.weight"] = full["decoder.final_layernorm.weight"].clone()
        sd["output_layer.weight"] = shard("output_layer.weight", full["output_layer.weight"], tp, rank)
    return sd


def save_rank(path, model, args, iteration, user_objects):
    ckpt = {
        "args": args,
        "checkpoint_version": 3.0,
        "iteration": iteration,
        "optimizer": {"optimizer": {"state": {0: {"exp_avg": torch.zeros(4), "exp_avg_sq": torch.ones(4), "step": torch.tensor(5.0)}},
                                    "param_groups": [{"lr": 1e-4, "betas": (0.9, 0.95), "params": [0]}]},
                      "fp32_from_fp16_params": [[torch.zeros(2)]]},
        "opt_param_scheduler": {"max_lr": 1e-4, "num_steps": iteration * 8},
        "rng_state": [{"random_rng_state": random.getstate(), "np_rng_state": np.random.get_state(),
                       "torch_rng_state": torch.get_rng_state(), "cuda_rng_state": torch.get_rng_state(),
                       "rng_tracker_states": {"model-parallel-rng": torch.get_rng_state()}}],
        "num_floating_point_operations_so_far": 12345,
    }
    if user_objects:
        ckpt["optimizer"]["grad_scaler"] = LossScaler()
        ckpt["rng_state"][0]["scaler"] = LossScaler()
    ckpt.update(model)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save(ckpt, path)


# msprobe's name_mapping.yaml, in its order (the names the compare reports).
NAME_MAPPING = [("self_attention.linear_qkv.layer_norm_", "input_layernorm."), ("language_model.", ""), ("encoder", "decoder"),
                (".input_norm.", ".input_layernorm."), ("query_key_value", "linear_qkv"), (".dense.", ".linear_proj."),
                ("post_attention_norm", "pre_mlp_layernorm"), ("dense_h_to_4h", "linear_fc1"), ("dense_4h_to_h", "linear_fc2"),
                ("mlp.local_experts", "mlp.experts.local_experts"), ("final_norm", "final_layernorm"),
                ("word_embeddings_for_head", "output_layer")]


def mapped(name):
    for old, new in NAME_MAPPING:
        name = name.replace(old, new)
    return name


def metrics(a, b):
    a = a.float().numpy().astype(np.float64)
    b = b.float().numpy().astype(np.float64)
    if a.shape != b.shape:
        return {"l2": None, "cos": None, "numel": [a.size, b.size], "shape": [list(a.shape), list(b.shape)]}
    na, nb = float(np.sum(a * a)), float(np.sum(b * b))
    if na == 0 and nb == 0:
        cos = 1.0
    elif na == 0 or nb == 0:
        cos = None
    else:
        cos = max(-1.0, min(1.0, float(np.sum(a * b)) / float(np.sqrt(na * nb))))
    return {"l2": float(np.sqrt(np.sum((a - b) ** 2))), "cos": cos, "numel": int(a.size), "shape": list(a.shape)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--pp", type=int, default=1)
    ap.add_argument("--vpp", type=int, default=1)
    ap.add_argument("--hidden", type=int, default=8)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=16)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--perturb")
    ap.add_argument("--iteration", type=int, default=10)
    ap.add_argument("--expected")
    ap.add_argument("--no-full", action="store_true", help="do not save OUT/full.pt (benchmarks)")
    ap.add_argument("--user-objects", action="store_true")
    ap.add_argument("--tensor-subclass")
    o = ap.parse_args()
    if o.expected:
        a, b = torch.load(os.path.join(o.out, "full.pt")), torch.load(o.expected)
        print(json.dumps([[mapped(k), metrics(a[k], b[k])] for k in a if k in b]))
        return
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[o.dtype]
    random.seed(o.seed)
    np.random.seed(o.seed)
    torch.manual_seed(o.seed)
    full = full_model(o.hidden, o.layers, o.vocab, dtype, o.seed)
    if o.perturb:
        t = full[o.perturb]
        t.view(-1)[0] += 1.5
        t.view(t.shape[0], -1)[-1] += 0.25
    args = argparse.Namespace(
        tensor_model_parallel_size=o.tp, pipeline_model_parallel_size=o.pp, expert_model_parallel_size=1,
        virtual_pipeline_model_parallel_size=o.vpp if o.vpp > 1 else None, num_experts=None, num_layers=o.layers,
        hidden_size=o.hidden, padded_vocab_size=o.vocab, swiglu=False, params_dtype=dtype, bf16=dtype == torch.bfloat16,
        model_type=ModelType.encoder_or_decoder, transformer_impl="transformer_engine", lr=1e-4, seed=o.seed,
        data_path=["/data/gpt_text_document"], iteration=o.iteration)
    if o.user_objects:
        args.run_config = RunConfig(4, "user class")
        args.lr_schedule = Schedule.cosine
        args.status = http.HTTPStatus.OK
    it = os.path.join(o.out, f"iter_{o.iteration:07d}")
    nchunks = o.pp * o.vpp
    for pp in range(o.pp):
        for tp in range(o.tp):
            model = {}
            for v in range(o.vpp):
                c = v * o.pp + pp
                sd = chunk_state(full, o.layers, c, nchunks, c == 0, c == nchunks - 1, o.tp, tp)
                if o.tensor_subclass in sd:
                    sd[o.tensor_subclass] = sd[o.tensor_subclass].as_subclass(TaggedTensor)
                model["model" if o.vpp == 1 else f"model{v}"] = StateDict(sd) if o.user_objects else sd
            rank = f"mp_rank_{tp:02d}" if o.pp == 1 else f"mp_rank_{tp:02d}_{pp:03d}"
            save_rank(os.path.join(it, rank, "model_optim_rng.pt"), model, args, o.iteration, o.user_objects)
    with open(os.path.join(o.out, "latest_checkpointed_iteration.txt"), "w") as f:
        f.write(str(o.iteration))
    if not o.no_full:
        torch.save(full, os.path.join(o.out, "full.pt"))


if __name__ == "__main__":
    main()
