"""A tensor dump of torch_npu's fused kernels at real sizes for `replay --minimize`
(tests/minimize.rs), written as zoo/make/npu/make_npu_dumps.py writes tests/fixtures/npu/ (msprobe
8.3.2's PyTorch tensor-dump format, `NPU.<op>.<N>` entries, the recorded values from the float32
torch compositions of runtime/tests/npu/compositions.py on the CPU: there is no NPU here), with
inputs of 10^5 to 10^6 elements; plant.py plants its copies.

    python npu_step.py OUT          (writes OUT/dump.json and OUT/dump_tensor_data/)

The calls: npu_fusion_attention as Megatron's causal call (SBH [512, 2, 768], 6 heads, an explicit
causal mask [1, 1, 512, 512], pre_tockens 65536, next_tockens 0, sparse mode 0), in BNSD
[2, 8, 256, 64] without a mask and in BSH [2, 256, 512] with 8 heads; npu_rms_norm [4, 256, 1024];
npu_swiglu [4, 256, 2048]; npu_fast_gelu and npu_mish [512, 1024]; npu_rotary_mul [4, 256, 8, 64]
with cos and sin [1, 256, 1, 64]; npu_scaled_masked_softmax [4, 8, 128, 128] with a mask
[4, 1, 128, 128]. Seeded: the same files every time.
"""
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "zoo" / "make" / "npu"), str(REPO / "runtime" / "tests" / "npu")]
import compositions as C  # noqa: E402
from make_npu_dumps import Dump, rand, record_call  # noqa: E402

SEED = 37


def calls():
    g = torch.Generator().manual_seed(SEED)
    fa_extra = [torch.empty(0), 0, 0, 0]  # softmax_out (reserved), seed, offset, numels
    causal = torch.ones(1, 1, 512, 512, dtype=torch.bool).triu(1)
    yield ("NPU.npu_fusion_attention.0", C.npu_fusion_attention, [rand(g, 512, 2, 768), rand(g, 512, 2, 768), rand(g, 512, 2, 768), 6, "SBH"],
           {"atten_mask": causal, "scale": 0.0884, "pre_tockens": 65536, "next_tockens": 0, "sparse_mode": 0}, fa_extra)
    yield ("NPU.npu_fusion_attention.1", C.npu_fusion_attention, [rand(g, 2, 8, 256, 64), rand(g, 2, 8, 256, 64), rand(g, 2, 8, 256, 64), 8, "BNSD"],
           {"scale": 0.125}, fa_extra)
    yield ("NPU.npu_fusion_attention.2", C.npu_fusion_attention, [rand(g, 2, 256, 512), rand(g, 2, 256, 512), rand(g, 2, 256, 512), 8, "BSH"],
           {"scale": 0.125}, fa_extra)
    yield ("NPU.npu_rms_norm.0", C.npu_rms_norm, [rand(g, 4, 256, 1024), rand(g, 1024, low=0.5, high=1.5)], {"epsilon": 1e-6}, [])
    yield ("NPU.npu_swiglu.0", C.npu_swiglu, [rand(g, 4, 256, 2048)], {"dim": -1}, [])
    yield ("NPU.npu_fast_gelu.0", C.npu_fast_gelu, [rand(g, 512, 1024, low=-4.0, high=4.0)], {}, [])
    yield ("NPU.npu_mish.0", C.npu_mish, [rand(g, 512, 1024, low=-4.0, high=4.0)], {}, [])
    yield ("NPU.npu_rotary_mul.0", C.npu_rotary_mul, [rand(g, 4, 256, 8, 64), rand(g, 1, 256, 1, 64), rand(g, 1, 256, 1, 64)], {}, [])
    yield ("NPU.npu_scaled_masked_softmax.0", C.npu_scaled_masked_softmax,
           [rand(g, 4, 8, 128, 128), torch.rand(4, 1, 128, 128, generator=g) < 0.3], {"scale": 0.5}, [])


def main():
    out = Path(sys.argv[1])
    dump = Dump(out)
    g = torch.Generator().manual_seed(SEED + 1)
    for key, f, args, kwargs, extra in calls():
        record_call(dump, g, key, f, args, kwargs, extra)
    dump.write()
    print("wrote", out)


if __name__ == "__main__":
    main()
