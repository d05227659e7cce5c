"""ms_fused_model: MindSpore's fused ops of mindspore.ops, one forward and backward step under
msprobe 26.2.0's PrecisionDebugger (MindSpore 2.10, PyNative, CPU).

Usage: python ms_fused_model.py <msprobe-config.json | none>
       python ms_fused_model.py --plant CLEAN PLANTED    (copy CLEAN to PLANTED, plant errors; see PLANTED)

Run by make_ms_fused_dumps.sh with msprobe 26.2.0 on PYTHONPATH; `none` runs the step without
msprobe. The calls, each on small float32 tensors, each output feeding a scalar loss (a weighted
sum, fixed random weights) whose gradient mindspore.value_and_grad takes with respect to every
float input, so that each call gets a forward and a backward entry (Functional.<op>.<N>):

  ops.rms_norm(x[2,4,8], gamma[8], epsilon=1e-6)                   -> (y, rstd); the loss uses y
  ops.fast_gelu(x[2,4,8])
  ops.rotary_position_embedding(x[1,2,4,8], cos[1,1,4,8], sin[1,1,4,8], mode=0)   (rotate_half)
  ops.rotary_position_embedding(x[1,2,4,8], cos[1,1,4,8], sin[1,1,4,8], mode=1)   (interleaved)
  ops.flash_attention_score(q, k, v [2,4,16], 2, attn_mask=<UInt8 [1,1,4,4], 1 above the diagonal>,
                            scalar_value=0.25, pre_tokens=65536, next_tokens=0, input_layout='BSH')
  ops.flash_attention_score(q, k, v [2,2,4,8], 2, scalar_value=0.35355339, input_layout='BNSD')

ops.swiglu is not called: msprobe 26.2.0 does not hook it (it is in no list of
msprobe/mindspore/dump/dump_processor/hook_cell/support_wrap_ops.yaml), so it would get no entry.

Stand-ins. MindSpore 2.10's CPU build registers no kernel for RmsNorm, Swiglu,
RotaryPositionEmbedding or FlashAttentionScore (PyNative: "The kernel RmsNorm unregistered";
graph mode: "Unsupported op [RmsNorm] on CPU"): they are Ascend-only. Before msprobe is imported,
each op is tried once on tiny inputs; where its kernel is missing, mindspore.ops.<op> is replaced
by a float32 composition of CPU kernels below (MindSpore's documented semantics; autodiff gives
its gradient). msprobe then wraps the replacement as it wraps the original, records it under the
same name (Functional.<op>.<N>) with the arguments as passed, and does not record the calls made
inside it (its hook manager counts nested API calls and skips them). So the dump's structure
(entries, arguments, output and gradient lists) is msprobe's own; the recorded values of those
ops are the compositions', not an Ascend kernel's. fast_gelu has a CPU kernel and runs for real.
The script prints which implementation each op used ("impl ...").

Like zoo/make/mindspore/zoo_common.py, mint.norm is replaced by ops.norm before msprobe is
imported: msprobe's Norm statistic calls mint.norm, whose kernel (LinalgVectorNorm) the CPU
build lacks.
"""
import subprocess
import sys

import numpy as np
import mindspore as ms
from mindspore import Tensor, mint, ops

SEED = 2026
INT_MAX = 2147483647


# ---- stand-ins for the kernels that the CPU build lacks --------------------------------------

def rms_norm_standin(x, gamma, epsilon=1e-6):
    """(y, rstd): over gamma's trailing dims, rstd = 1/sqrt(mean(x^2) + eps) (dims kept as 1),
    y = x * rstd * gamma. The kernel's gradient ignores rstd's (RmsNormGrad takes dy only), so
    rstd is returned through stop_gradient."""
    axes = tuple(range(x.ndim - gamma.ndim, x.ndim))
    rstd = ops.rsqrt(ops.mean(ops.square(x), axis=axes, keep_dims=True) + epsilon)
    y = x * rstd * gamma
    return y, ops.stop_gradient(rstd)


def rotary_position_embedding_standin(x, cos, sin, mode=0):
    """x * cos + rot(x) * sin; mode 0 rotates the halves of the last dim (x1, x2 -> -x2, x1),
    mode 1 the interleaved pairs (x0, x1 -> -x1, x0)."""
    d = x.shape[-1]
    if mode == 0:
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        rot = ops.cat((-x2, x1), axis=-1)
    elif mode == 1:
        pairs = x.reshape(x.shape[:-1] + (d // 2, 2))
        rot = ops.cat((-pairs[..., 1:2], pairs[..., 0:1]), axis=-1).reshape(x.shape)
    else:
        raise ValueError(f"rotary_position_embedding: mode {mode}")
    return x * cos + rot * sin


def flash_attention_score_standin(query, key, value, head_num, real_shift=None, drop_mask=None,
                                  padding_mask=None, attn_mask=None, prefix=None, actual_seq_qlen=None,
                                  actual_seq_kvlen=None, keep_prob=1.0, scalar_value=1.0,
                                  pre_tokens=INT_MAX, next_tokens=INT_MAX, inner_precise=0,
                                  input_layout='BSH', sparse_mode=0):
    """attention_out = softmax(mask(scalar_value * q k^T)) v, sparse_mode 0: attn_mask 1 (True)
    discards a place and, when a mask is given, so does the token band (keep j - i <= next_tokens
    and i - j <= pre_tokens); without a mask nothing is discarded. BSH, SBH, BSND, BNSD only; no
    real_shift, dropout, prefix or TND."""
    if (real_shift, drop_mask, padding_mask, prefix, actual_seq_qlen, actual_seq_kvlen) != (None,) * 6 \
            or keep_prob != 1.0 or sparse_mode != 0:
        raise NotImplementedError("flash_attention_score stand-in: sparse_mode 0, no pse/dropout/prefix/TND")

    def to_bnsd(t):
        if input_layout == 'BNSD':
            return t
        if input_layout == 'BSND':
            return t.transpose(0, 2, 1, 3)
        head_dim = query.shape[-1] // head_num  # H1 = N1 * D
        if input_layout == 'BSH':
            b, s, _ = t.shape
            return t.reshape(b, s, -1, head_dim).transpose(0, 2, 1, 3)
        if input_layout == 'SBH':
            s, b, _ = t.shape
            return t.reshape(s, b, -1, head_dim).transpose(1, 2, 0, 3)
        raise NotImplementedError(f"flash_attention_score stand-in: layout {input_layout}")

    q, k, v = to_bnsd(query), to_bnsd(key), to_bnsd(value)
    if k.shape[1] != q.shape[1]:  # grouped heads: N1 = g * N2
        group = q.shape[1] // k.shape[1]
        k, v = ops.repeat_interleave(k, group, axis=1), ops.repeat_interleave(v, group, axis=1)
    scores = ops.matmul(q, k.swapaxes(-1, -2)) * scalar_value
    if attn_mask is not None:
        s1, s2 = scores.shape[-2], scores.shape[-1]
        i = np.arange(s1)[:, None]
        j = np.arange(s2)[None, :]
        band = Tensor((j - i > next_tokens) | (i - j > pre_tokens))
        discard = ops.logical_or(attn_mask.astype(ms.bool_), band)
        scores = ops.masked_fill(scores, discard, Tensor(-1e30, ms.float32))
    out = ops.matmul(ops.softmax(scores, axis=-1), v)  # [B, N, S1, D]
    b, n, s, d = out.shape
    if input_layout == 'BNSD':
        return out
    if input_layout == 'BSND':
        return out.transpose(0, 2, 1, 3)
    if input_layout == 'BSH':
        return out.transpose(0, 2, 1, 3).reshape(b, s, n * d)
    return out.transpose(2, 0, 1, 3).reshape(s, b, n * d)  # SBH


PROBE_INPUT = np.linspace(-1, 1, 16, dtype=np.float32).reshape(1, 1, 2, 8)
PROBES = {  # one call of each op on tiny inputs
    "rms_norm": lambda f: ops.rms_norm(f, f[0, 0, 0]),
    "rotary_position_embedding": lambda f: ops.rotary_position_embedding(f, f, f, mode=0),
    "flash_attention_score": lambda f: ops.flash_attention_score(f, f, f, 1, input_layout='BNSD'),
    "fast_gelu": ops.fast_gelu,
}
STANDINS = {
    "rms_norm": rms_norm_standin,
    "rotary_position_embedding": rotary_position_embedding_standin,
    "flash_attention_score": flash_attention_score_standin,
}


def probe(name):
    """`python ms_fused_model.py --probe <op>`: exit 0 when the op runs here, 3 when it dies."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")
    try:
        out = PROBES[name](Tensor(PROBE_INPUT))
        for o in out if isinstance(out, (tuple, list)) else (out,):
            o.asnumpy()  # PyNative reports a missing kernel at the next sync
    except RuntimeError as e:
        print(str(e).strip().splitlines()[0], flush=True)
        raise SystemExit(3)


def install_standins():
    """Replace each mindspore.ops fused op whose kernel is missing here by its stand-in. Each op
    is tried in a process of its own: after a missing kernel, PyNative raises the same error
    again at a later sync, whatever is run."""
    for name in PROBES:
        r = subprocess.run([sys.executable, __file__, "--probe", name], capture_output=True, text=True)
        why = (r.stdout.strip().splitlines() or ["?"])[-1]
        if r.returncode == 0:
            print(f"impl {name}: MindSpore's kernel", flush=True)
        elif r.returncode == 3 and name in STANDINS:
            setattr(ops, name, STANDINS[name])
            print(f"impl {name}: stand-in composition ({why})", flush=True)
        else:
            raise SystemExit(f"{name} does not run here (exit {r.returncode}): {why}\n{r.stderr[-2000:]}")


# ---- planted errors --------------------------------------------------------------------------

# One per call: (key, "forward.output.<i>" or "backward.output.<i>", element, shift): in that
# tensor file the element (flat index, C order) moves by shift * max|t| (tests/fixtures/npu's
# convention), computed and written back in float32 with np.save (msprobe writes its .npy files
# with np.save too: an unplanted file round-trips to the same bytes). dump.json keeps msprobe's
# statistics of the unplanted values.
PLANTED = [
    ("Functional.rms_norm.0", "forward.output.0", 5, 0.25),
    ("Functional.fast_gelu.0", "backward.output.0", 3, 0.5),
    ("Functional.rotary_position_embedding.0", "forward.output.0", 9, 0.1),
    ("Functional.rotary_position_embedding.1", "backward.output.1", 2, 0.5),
    ("Functional.flash_attention_score.0", "backward.output.0", 37, 0.25),
    ("Functional.flash_attention_score.1", "forward.output.0", 11, 0.1),
]


def plant(clean, planted):
    """Copy the dump folder `clean` to `planted` (absent) and plant PLANTED there."""
    import json
    import shutil
    from pathlib import Path

    clean, planted = Path(clean), Path(planted)
    shutil.copytree(clean, planted)
    data = json.loads((clean / "dump.json").read_text())["data"]
    calls = {k.rsplit(".", 1)[0] for k in data}
    if calls != {key for key, *_ in PLANTED}:
        raise SystemExit(f"calls in the dump {sorted(calls)} are not those of PLANTED")
    for key, where, element, shift in PLANTED:
        direction, _, index = where.split(".")
        recorded = data[f"{key}.{direction}"]["output"][int(index)]
        path = planted / "dump_tensor_data" / recorded["data_name"]
        t = np.load(path)
        before = t.reshape(-1)[element]
        t.reshape(-1)[element] += np.float32(shift) * np.abs(t).max()
        np.save(path, t)
        print(f"planted {key}.{where}[{element}]: {before!r} -> {t.reshape(-1)[element]!r}", flush=True)
    rows = [{"key": k, "where": w, "row": f"{k}.{w}", "element": e, "shift": f} for k, w, e, f in PLANTED]
    (planted / "planted.json").write_text(json.dumps(rows, indent=1) + "\n")


# ---- the step --------------------------------------------------------------------------------

def rope_tables(mode, seq=4, dim=8, base=10000.0):
    """cos, sin [1, 1, seq, dim] for positions 0..seq-1: halves repeated (mode 0) or pairs (mode 1)."""
    inv = base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    ang = np.arange(seq, dtype=np.float64)[:, None] * inv[None, :] + 0.3  # offset: no all-1 cos row
    ang = np.concatenate([ang, ang], -1) if mode == 0 else np.repeat(ang, 2, -1)
    as_t = lambda a: Tensor(a.reshape(1, 1, seq, dim).astype(np.float32))  # noqa: E731
    return as_t(np.cos(ang)), as_t(np.sin(ang))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--probe":
        return probe(sys.argv[2])
    if len(sys.argv) == 4 and sys.argv[1] == "--plant":
        return plant(sys.argv[2], sys.argv[3])
    if len(sys.argv) < 2:
        raise SystemExit(f"usage: {sys.argv[0]} <msprobe-config.json | none>")
    config = sys.argv[1]
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")
    ms.set_seed(SEED)
    np.random.seed(SEED)
    install_standins()
    debugger = None
    if config != "none":
        mint.norm = ops.norm  # msprobe's Norm statistic on CPU (see the module docstring)
        from msprobe.mindspore import PrecisionDebugger, seed_all
        seed_all(seed=SEED)
        debugger = PrecisionDebugger(config_path=config)

    rng = np.random.default_rng(SEED)

    def t(*shape, low=-2.0, high=2.0):
        return Tensor(rng.uniform(low, high, shape).astype(np.float32))

    cos0, sin0 = rope_tables(0)
    cos1, sin1 = rope_tables(1)
    inputs = [
        t(2, 4, 8), t(8, low=0.5, high=1.5),           # rms_norm x, gamma
        t(2, 4, 8, low=-4.0, high=4.0),                # fast_gelu x
        t(1, 2, 4, 8), cos0, sin0,                     # rotary_position_embedding mode 0
        t(1, 2, 4, 8), cos1, sin1,                     # rotary_position_embedding mode 1
        t(2, 4, 16), t(2, 4, 16), t(2, 4, 16),         # flash_attention_score BSH
        t(2, 2, 4, 8), t(2, 2, 4, 8), t(2, 2, 4, 8),   # flash_attention_score BNSD
    ]
    causal = Tensor(np.triu(np.ones((1, 1, 4, 4), np.uint8), 1))  # UInt8, 1 = discard
    # loss weights, one per output (fixed, so that every gradient is a different tensor)
    weights = [t(2, 4, 8), t(2, 4, 8), t(1, 2, 4, 8), t(1, 2, 4, 8), t(2, 4, 16), t(2, 2, 4, 8)]

    def loss_fn(xn, gamma, xg, xr0, c0, s0, xr1, c1, s1, q0, k0, v0, q1, k1, v1):
        y, _rstd = ops.rms_norm(xn, gamma, epsilon=1e-6)
        outs = [
            y,
            ops.fast_gelu(xg),
            ops.rotary_position_embedding(xr0, c0, s0, mode=0),
            ops.rotary_position_embedding(xr1, c1, s1, mode=1),
            ops.flash_attention_score(q0, k0, v0, 2, attn_mask=causal, scalar_value=0.25,
                                      pre_tokens=65536, next_tokens=0, input_layout='BSH'),
            ops.flash_attention_score(q1, k1, v1, 2, scalar_value=0.35355339, input_layout='BNSD'),
        ]
        return sum((o * w).sum() for o, w in zip(outs, weights))

    grad_fn = ms.value_and_grad(loss_fn, grad_position=tuple(range(len(inputs))))
    if debugger is not None:
        debugger.start()
    loss, grads = grad_fn(*inputs)
    if debugger is not None:
        debugger.stop()
        debugger.step()
    norms = " ".join(f"{float(np.linalg.norm(g.asnumpy())):.6f}" for g in grads)
    print(f"ms_fused: step 0 loss {float(loss.asnumpy()):.6f}; gradient norms {norms}", flush=True)


if __name__ == "__main__":
    main()
