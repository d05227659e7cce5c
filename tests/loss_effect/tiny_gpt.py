"""Fixtures of "which call moved the loss": one training step of a small bfloat16 GPT, dumped by the
real msprobe (8.3.2 and 26.2.0; task tensor, level L1, forward and backward), clean and with three
calls made inaccurate on purpose ("faulty"), plus the loss effect of every call by exact patching,
plus msprobe's own compare of the faulty dump against the clean one.

Subcommands (PY: a Python with torch, e.g. ~/.cache/msprobe-rs/venv/bin/python):

    PYTHONPATH=<msprobe 8.3.2 or 26.2.0> $PY tiny_gpt.py dump --variant faulty|clean --out DIR [--risk-level ALL]
    $PY tiny_gpt.py patch --variant faulty|clean --dump DUMP.json --out FILE.json          (no msprobe)
    PYTHONPATH=<msprobe 26.2.0 or 8.3.2> $PY tiny_gpt.py compare --npu FAULTY.json --bench CLEAN.json --out DIR
    $PY tiny_gpt.py names DUMP.json [DUMP.json ...]

(msprobe 8.3.2: PYTHONPATH=~/.cache/msprobe-rs/msprobe-8.3.2; msprobe 26.2.0:
PYTHONPATH=~/.cache/msprobe-rs/msprobe-26.2.0:~/.cache/msprobe-rs/msprobe-26.2.0-pytorch.)

The model. Token and position embeddings (`F.embedding`, added), LAYERS pre-norm transformer
blocks (`F.layer_norm`; one qkv `F.linear`, split into q, k, v of HEADS heads; the scores
`torch.matmul(q, k^T)` times 1/sqrt(head size); the causal mask `masked_fill(mask, MASK_FILL)` in
bfloat16 (MASK_FILL -30.3: msprobe records the fill value as the float -30.3, the output holds
bfloat16's -30.25; the masked probabilities are 1e-16 to 2e-12, not 0: see msprobe 26.2.0's
compare below); `F.softmax`; `torch.matmul` with v; the output projection `F.linear`; the residual
add; `F.layer_norm`; the MLP `F.linear`, GPT-2's gelu written out as its reference code writes it
(`gelu_new`: `torch.pow`, `Tensor.__rmul__`, `__add__`, `torch.tanh`, `__radd__`, `__mul__`: eight
calls, each rounded to bfloat16), `F.linear`; the residual add), a final
`F.layer_norm`, the lm head `torch.matmul(x, head_w)` (head_w: D x VOCAB, no bias) and
`F.cross_entropy` of the logits cast to float32 (the step's loss, float32, the last loss call of the step). Every parameter and
activation is bfloat16 except the float32 logits and loss. The parameters, tokens and targets
(random tokens, random targets) are drawn from a fixed generator (SEED) and torch runs one thread:
every run computes the same bits, with either msprobe (the two versions' tensors are identical)
and without. One step: forward, then backward from a gradient of 1 made beforehand (see `step`);
no optimizer step. LAYERS = 11 blocks of 28 calls: 630 dump entries (315 forward, 315 backward),
the same names in the same order for both versions and both variants.

The scales (why the model is as it is). A bfloat16 model is chaotic at the scale of its rounding:
moving one element of an activation by one ulp re-rounds much of what follows, the bfloat16 logits
above all (at |logit| in [8, 16) a logit's ulp is 0.0625), and the loss moves by up to 2e-3 here
when a call's output is put back to its float64 value (the bfloat16 `torch.pow` calls most), and
by up to 0.0049 when a whole output moves by one rounding error (see `noise`); a sharp attention (large
scores) amplifies this by an order of magnitude (the earlier version of this fixture: QKV_STD 0.6,
up to 0.055, and exact patching of an early plant measured mostly noise: its first-order effect
and its exact change had opposite signs). So: soft attention (QKV_STD 0.15, scores of std ~1.2),
small block outputs (PROJ_GAIN, OUT_GAIN 0.1) on a small residual stream (EMBED_STD 0.1), 256
tokens (BATCH 8 x SEQ 32: the rounding noise of the mean loss averages out over the tokens, an
error that moves every token's loss the same way does not), and two plants at the end whose
errors change the logits' scale, which moves the loss of random targets the same way in every
token (unlike an error that turns the representation's direction): the final layer_norm and the
lm head. Large logits (HEAD_STD 0.4: logits of std 2.8, the clean loss 8.04, above
ln(VOCAB) = 4.56) make the scale matter. An attention error turns the representation's
direction, and how much that moves the loss of random targets depends on the data: the softmax
plant's block (SOFTMAX_BLOCK) has a value projection of V_GAIN = 5 times the std, so that block's
attention output is a large share of the residual stream and its probabilities matter, and SEED
is the one of 1234..1299 under which the plant moves the loss most (0.036 against 0.001 to 0.025
for most seeds; its 9% error moves the loss by 7 times the noise).

The plants (variant `faulty`; PLANTS/PLANTED name them; `planted` in the patch JSON lists them):

    Functional.softmax.1    the softmax of block 1, with each row's maximum raised by
                            SOFTMAX_SHIFT = 0.2 before exponentiation (the probabilities are not
                            those of the input: the top one is too large, the others too small);
                            error 9.0% of the output's norm;
    Functional.layer_norm.22 the final layer_norm (occurrence 2 * LAYERS), computed with eps x 1000
                            (1e-2 instead of 1e-5): its input, the residual stream, is normalized
                            a few % too small (error 2.5% of the output's norm);
    Torch.matmul.22         the lm head (occurrence 2 * LAYERS), computed from its inputs (the
                            final layer_norm's output and head_w) truncated (towards zero) to 6 of
                            bfloat16's 7 stored mantissa bits: the logits are ~0.7% too small
                            (error 0.73% of the output's norm).

In execution order softmax.1 comes first, then layer_norm.22, then matmul.22 (its input 0 is the
planted layer_norm's output: its own error is relative to that input). Exact patching (faulty, see
`patch`): layer_norm.22 +0.141, softmax.1 -0.0355, matmul.22 +0.0354; every other call's change is
below 2.2e-3. The clean step's rounding noise (`noise` below) is 0.0049: the three plants move the
loss by 29, 7.3 and 7.3 times it, and each one's first-order effect <dL/dy, y - round(f64 op(inputs))>
(dL/dy the call's recorded incoming gradient) is within 3% of minus the exact change (0.994, 1.028
and 0.997 of it), with the same signs. Each error is below 10% of its output's norm, where a
first-order estimate is taken as reliable.

msprobe 26.2.0's compare flags a call only when its inputs agree with the bench and its output
does not (One Thousandth Err Ratio > 0.9 in, < 0.1 out: error; or Cosine > 0.9 in and a drop of
more than 0.1: warning); the later plants' inputs already differ (softmax.1 is upstream of both),
and the smooth model amplifies nothing, so only softmax.1 can be flagged, by the ratio: hence the
leaky mask. With a -1e4 fill the masked probabilities are exactly 0 in both runs, half the output
agrees whatever the plant does (ratio >= 0.48), and only a cosine drop could flag it, which takes a
shift of 1.5 (an error of 73%); with -30.3 every masked probability moves with its row's sum, the
output's ratio is 0.001, and the row is an error.

How a plant hides from msprobe. msprobe's L1 dump wraps the APIs of its support list by replacing
the attributes `torch.matmul`, `torch.nn.functional.softmax`, ... with wrappers around whatever it
finds there when the PrecisionDebugger is created. `install_plants` replaces those three
attributes first, with wrappers that count their calls and, at the planted occurrence, compute the
wrong result with `torch.ops.aten.*` operators (which msprobe does not dump at L1), still
differentiable (a straight-through truncation for the matmul). msprobe then wraps the plant: it
records the call under its usual name with the inputs the model passed and the plant's output
(nested calls are not recorded: msprobe counts the API nesting depth and records the outermost
call only), and every later call consumes the wrong value. The model looks the three APIs up at
call time (`torch.matmul(...)`, `F.softmax(...)`, `F.layer_norm(...)`), so it calls the wrappers
(both variants: the clean one runs the same Python). `dump` verifies it on the dump it wrote: each
planted call's input 0 is bit for bit the recorded output of an earlier call, its recorded output is
bit for bit the plant's result of its recorded inputs (`clean`: the correct result), which differs
from the correct result, a later call received that output (unless the risk level leaves the calls
around it out), and there is no aten entry. `names`
checks that dumps hold the same set of names (clean against faulty, 8.3.2 against 26.2.0).

`dump` writes DIR/config.json (task tensor, level L1, step [0], dump_path DIR/dump, and
risk_level: msprobe 26.2.0 records only the APIs of its risk level, and its default FOCUS leaves
out Tensor.transpose, split, reshape and float: 208 entries; the default here is ALL; 8.3.2 ignores
the key), runs the step under `PrecisionDebugger`, prints the loss and, as its last line, the
absolute path of the dump.json (8.3.2: DIR/dump/step0/rank/dump.json; 26.2.0:
DIR/dump/step0/proc<pid>/dump.json). The msprobe version is read with importlib.metadata.

`patch` ("exact patching"): for every forward call of the dump (dump.json order) whose output is a
floating tensor or a tuple of them, the step is run again (same variant, parameters and inputs)
with that one call's output replaced by the correct function (never the plant) computed in float64
from the inputs the call received in this run, cast to the output's dtype; the value is replaced
exactly and autograd still works (`patched + (out - out.detach())`). It records loss_patched -
loss_unpatched per call. The calls are named as msprobe names them (`Functional.x.N`, `Torch.x.N`,
`Tensor.x.N`, N counting per API from 0): the APIs that occur in the dump are wrapped on
torch.nn.functional, torch and torch.Tensor, only the outermost call is counted (as msprobe does),
the sequence of names is asserted equal to the dump's forward names in order, and the unpatched
loss is asserted equal to the loss the dump recorded. Output:

    {"variant": ..., "loss": <unpatched loss>, "changes": {"<name without .forward>": <float>, ...},
     "planted": ["Torch.matmul.22", "Functional.softmax.1", "Functional.layer_norm.22"],
     "noise": <float>, "noise_call": "<name>", "flips": {"<name>": <float>, ...}}

`noise` is the step's rounding noise: for every call of `changes`, the step is run once more with
that call's output moved by one rounding error: every element replaced by the value of the output's
dtype on the other side of its float64 value (the correct function of the call's inputs in this run,
as above), i.e. the correct value rounded the other way (`other_rounding`; an element whose float64
value the dtype represents exactly, or that is not finite, is that value: embeddings, views, casts
do not move); `flips` holds loss_flipped - loss_unpatched per call, `noise` the largest |flip| and
`noise_call` its call. Use the clean variant's: in `faulty` the flip of a planted call removes the
plant, so its noise is the largest plant's effect. Clean: noise 0.0049 (Functional.linear.0, the
first block's qkv projection; median |flip| 5.0e-4), while every call's exact-patching change is
below 2.1e-3 and its first-order effect below 1e-5 (the APIs round correctly or nearly). `patch`
takes ~14 s (2 x 315 steps) plus ~1.5 s to start.

`compare` runs msprobe's own compare of the faulty dump (npu) against the clean one (bench) as a
user does, through `python -m msprobe.msprobe`, prints a summary of each result (header, rows,
pass/warning/error counts) and the paths of what it wrote:

    26.2.0: `msprobe compare -tp FAULTY.json -gp CLEAN.json -o DIR` writes compare_result_<time>.csv
            (its default format), then the same with `--xlsx` writes compare_result_<time>.xlsx
            (26.2.0 has no `-f pytorch` and no `-i compare.json`); the column `Result` says
            pass / warning / error;
    8.3.2:  `msprobe -f pytorch compare -i DIR/compare.json -o DIR -hl` writes
            compare_result_<time>.xlsx (8.3.2 cannot write a .csv) and advisor_<time>.txt; the
            column `Accuracy Reached or Not` says Yes / No / None, -hl colours rows red or yellow.

On these dumps (1965 rows each): 26.2.0 flags one row, Functional.softmax.1.forward.output.0, an
error (One Thousandth Err Ratio 1.0 in, 0.001 out), and passes the other 1964, among them
layer_norm.22, the plant that moves the loss most, and matmul.22; 8.3.2 says No for 44 rows (Yes
1565, None 356) and colours 63 red (from Functional.softmax.1.forward.output.0 on) and 9 yellow.
"""
import argparse
import glob
import importlib.metadata
import json
import math
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

VOCAB, D, HEADS, SEQ, BATCH, LAYERS = 96, 48, 2, 32, 8, 11
DH = D // HEADS
SCALE = DH ** -0.5
EPS = 1e-5
SEED = 1286
BF16 = torch.bfloat16
EMBED_STD, POS_STD, QKV_STD, HEAD_STD = 0.1, 0.02, 0.15, 0.4
PROJ_GAIN, OUT_GAIN = 0.1, 0.1  # the blocks' output projections: std GAIN / sqrt(fan in)
SOFTMAX_BLOCK = 1  # the block of the planted softmax
V_GAIN = {SOFTMAX_BLOCK: 5.0}  # block -> factor on the std of its value projection (rows 2D..3D of qkv_w)
SOFTMAX_SHIFT = 0.2
GELU_C = math.sqrt(2.0 / math.pi)
MASK_FILL = -30.3  # the causal mask's fill value (bfloat16 holds -30.25)
TRUNCATE_BITS = 6  # stored mantissa bits kept by the planted matmul (bfloat16 stores 7)

# The planted occurrence of each API (counted from 0 per API name, as msprobe counts).
PLANTS = {"Torch.matmul": 2 * LAYERS, "Functional.softmax": SOFTMAX_BLOCK, "Functional.layer_norm": 2 * LAYERS}
PLANTED = [f"{name}.{n}" for name, n in PLANTS.items()]

aten = torch.ops.aten
# The correct functions, taken before anything (plant, msprobe, patcher) wraps them.
REAL = {"Torch.matmul": torch.matmul, "Functional.softmax": F.softmax, "Functional.layer_norm": F.layer_norm}
PREFIX_MODULE = {"Functional": F, "Torch": torch, "Tensor": torch.Tensor}


# ---------------------------------------------------------------------------------------------
# The plants: aten operators only (msprobe's L1 dump records none of them), differentiable.

def truncate_mantissa(x):
    """x (bfloat16) with its mantissa truncated to TRUNCATE_BITS bits, straight-through gradient."""
    raw = aten.view.dtype(x, torch.int16)
    cut = aten.view.dtype(aten.bitwise_and.Scalar(raw, -(1 << (7 - TRUNCATE_BITS))), BF16)
    return aten.add.Tensor(x, aten.detach.default(aten.sub.Tensor(cut, x)))  # exact: cut - x is exact


def planted_matmul(a, b):
    return aten.matmul.default(truncate_mantissa(a), truncate_mantissa(b))


def planted_softmax(x, dim=None, _stacklevel=3, dtype=None):
    top = aten.eq.Tensor(x, aten.amax.default(x, [dim], True))
    shifted = aten.add.Tensor(x, aten.mul.Scalar(aten._to_copy.default(top, dtype=x.dtype), SOFTMAX_SHIFT))
    return aten._softmax.default(shifted, dim, False)


def planted_layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return aten.native_layer_norm.default(x, list(normalized_shape), weight, bias, eps * 1000)[0]


WRONG = {"Torch.matmul": planted_matmul, "Functional.softmax": planted_softmax, "Functional.layer_norm": planted_layer_norm}


def install_plants(variant):
    """Replace torch.matmul, F.softmax and F.layer_norm by counting wrappers (both variants, so
    that the two run the same Python); in `faulty` the planted occurrence calls the plant.
    Returns the per-API call counts (clear it before a step)."""
    counts = {}

    def wrap(name):
        prefix, attr = name.split(".")
        real, wrong = REAL[name], WRONG[name]

        def call(*args, **kwargs):
            n = counts.get(name, 0)
            counts[name] = n + 1
            if variant == "faulty" and n == PLANTS[name]:
                return wrong(*args, **kwargs)
            return real(*args, **kwargs)

        call.__name__ = attr
        setattr(PREFIX_MODULE[prefix], attr, call)

    for name in PLANTS:
        wrap(name)
    return counts


# ---------------------------------------------------------------------------------------------
# The model and its step.

def build():
    """Parameters (bfloat16 leaves), tokens, targets, causal mask, positions, the loss's
    incoming gradient: all fixed, made before msprobe starts."""
    g = torch.Generator().manual_seed(SEED)

    def p(*shape, std, mean=0.0):
        return (mean + std * torch.randn(*shape, generator=g)).to(BF16).requires_grad_(True)

    params = {"wte": p(VOCAB, D, std=EMBED_STD), "wpe": p(SEQ, D, std=POS_STD), "blocks": []}
    for b in range(LAYERS):
        qkv_std = torch.tensor([QKV_STD] * (2 * D) + [QKV_STD * V_GAIN.get(b, 1.0)] * D).unsqueeze(1)
        params["blocks"].append({
            "ln1_w": p(D, std=0.1, mean=1.0), "ln1_b": p(D, std=0.02),
            "qkv_w": p(3 * D, D, std=qkv_std), "qkv_b": p(3 * D, std=0.02),
            "proj_w": p(D, D, std=PROJ_GAIN / math.sqrt(D)), "proj_b": p(D, std=0.01),
            "ln2_w": p(D, std=0.1, mean=1.0), "ln2_b": p(D, std=0.02),
            "fc_w": p(4 * D, D, std=1 / math.sqrt(D)), "fc_b": p(4 * D, std=0.02),
            "out_w": p(D, 4 * D, std=OUT_GAIN / math.sqrt(4 * D)), "out_b": p(D, std=0.01),
        })
    params["lnf_w"], params["lnf_b"] = p(D, std=0.1, mean=1.0), p(D, std=0.02)
    params["head_w"] = p(D, VOCAB, std=HEAD_STD)
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    targets = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    mask = torch.ones(SEQ, SEQ, dtype=torch.bool).triu(1)
    pos = torch.arange(SEQ)
    one = torch.ones((), dtype=torch.float32)
    return params, tokens, targets, mask, pos, one


def gelu_new(x):
    """GPT-2's activation as its reference code writes it (Hugging Face's NewGELUActivation): eight
    calls, each rounded to bfloat16."""
    return 0.5 * x * (1.0 + torch.tanh(GELU_C * (x + 0.044715 * torch.pow(x, 3.0))))


def forward(params, tokens, targets, mask, pos):
    """The loss (float32). torch.matmul, F.* and tensor methods are looked up at call time."""
    x = F.embedding(tokens, params["wte"]) + F.embedding(pos, params["wpe"])
    for blk in params["blocks"]:
        h = F.layer_norm(x, (D,), blk["ln1_w"], blk["ln1_b"], EPS)
        q, k, v = F.linear(h, blk["qkv_w"], blk["qkv_b"]).split(D, dim=-1)
        q, k, v = (t.view(BATCH, SEQ, HEADS, DH).transpose(1, 2) for t in (q, k, v))
        scores = torch.matmul(q, k.transpose(-2, -1)) * SCALE
        scores = scores.masked_fill(mask, MASK_FILL)
        att = F.softmax(scores, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(BATCH, SEQ, D)
        x = x + F.linear(y, blk["proj_w"], blk["proj_b"])
        h = F.layer_norm(x, (D,), blk["ln2_w"], blk["ln2_b"], EPS)
        x = x + F.linear(gelu_new(F.linear(h, blk["fc_w"], blk["fc_b"])), blk["out_w"], blk["out_b"])
    x = F.layer_norm(x, (D,), params["lnf_w"], params["lnf_b"], EPS)
    logits = torch.matmul(x, params["head_w"])
    return F.cross_entropy(logits.float().view(BATCH * SEQ, VOCAB), targets.view(BATCH * SEQ))


def step(data):
    """The step: forward, then backward from a gradient of 1 made in build() (autograd would
    otherwise call torch.ones_like, which msprobe 8.3.2 records as `Torch.ones_like.0.forward`
    after the loss and 26.2.0 does not). Returns the loss."""
    loss = forward(*data[:5])
    loss.backward(data[5])
    return loss


EXPECTED_COUNTS = {"Torch.matmul": 2 * LAYERS + 1, "Functional.softmax": LAYERS, "Functional.layer_norm": 2 * LAYERS + 1}


def deterministic():
    torch.set_num_threads(1)
    torch.manual_seed(SEED)


# ---------------------------------------------------------------------------------------------
# dump

def load_dump(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def load_arg(dump_dir, desc):
    """A recorded tensor (its .pt file), or the recorded value of a non-tensor argument."""
    if isinstance(desc, dict) and "data_name" in desc:
        return torch.load(os.path.join(dump_dir, "dump_tensor_data", desc["data_name"]), weights_only=True)
    if isinstance(desc, dict) and desc.get("type") in ("tuple", "list") and "value" in desc:
        return [load_arg(dump_dir, d) for d in desc["value"]]
    if isinstance(desc, dict):
        return desc.get("value")
    if isinstance(desc, list):
        return [load_arg(dump_dir, d) for d in desc]
    return desc


def producer(dump_dir, data, name, x):
    """The last forward call before `name` whose recorded output (or one of them) equals x bit for bit."""
    found = None
    for key, entry in data.items():
        if key == name + ".forward":
            return found
        if key.endswith(".forward"):
            for i, desc in enumerate(entry.get("output", [])):
                if isinstance(desc, dict) and desc.get("shape") == list(x.shape) and desc.get("dtype") == str(x.dtype):
                    if torch.equal(load_arg(dump_dir, desc), x):
                        found = f"{key[: -len('.forward')]} output {i}"
    return found


def consumer(dump_dir, data, name, y):
    """The first forward call after `name` with an input equal to y bit for bit."""
    after = False
    for key, entry in data.items():
        if key == name + ".forward":
            after = True
        elif after and key.endswith(".forward"):
            for i, desc in enumerate(entry.get("input_args", [])):
                if isinstance(desc, dict) and desc.get("shape") == list(y.shape) and desc.get("dtype") == str(y.dtype):
                    if torch.equal(load_arg(dump_dir, desc), y):
                        return f"{key[: -len('.forward')]} input {i}"
    return None


def verify_dump(dump_json, variant, every_call=True):
    """The planted entries: recorded inputs in, plant's output out (faulty) or correct output (clean)."""
    data = load_dump(dump_json)["data"]
    dump_dir = os.path.dirname(dump_json)
    bad = [k for k in data if k.lower().startswith("aten")]
    assert not bad, f"aten entries in the dump: {bad[:5]}"
    for name in PLANTED:
        api = name.rsplit(".", 1)[0]
        entry = data[name + ".forward"]
        args = [load_arg(dump_dir, a) for a in entry["input_args"]]
        kwargs = {k: load_arg(dump_dir, v) for k, v in entry.get("input_kwargs", {}).items()}
        recorded = load_arg(dump_dir, entry["output"][0])
        with torch.no_grad():
            correct = REAL[api](*args, **kwargs)
            wrong = WRONG[api](*args, **kwargs)
        # The recorded inputs are the values the model passed: each activation input is, bit for
        # bit, the recorded output of the call that produced it (parameters have no producer).
        producers = []
        for i, x in enumerate(args):
            if isinstance(x, torch.Tensor):
                producers.append(f"input {i} = " + (producer(dump_dir, data, name, x) or "no recorded call's output (a parameter, or an unrecorded call)"))
        # (with 26.2.0's risk_level FOCUS the producers, e.g. Tensor.transpose, are not recorded)
        assert "no recorded call" not in producers[0] or not every_call, f"{name}: input 0 is no earlier call's recorded output"
        used = consumer(dump_dir, data, name, recorded)
        # (with FOCUS the lm head's consumer, Tensor.float, is not recorded either)
        assert used or not every_call, f"{name}: no later call received its recorded output"
        print(f"{name}: " + "; ".join(producers) + f"; its output = {used}")
        differ = int((correct != wrong).sum())
        assert differ > 0, f"{name}: the plant equals the correct function on the recorded inputs"
        expected = wrong if variant == "faulty" else correct
        assert torch.equal(recorded, expected), f"{name}: recorded output is not the {variant} result of its recorded inputs"
        print(f"verified {name}: recorded output = {'plant' if variant == 'faulty' else 'correct'}({len(args)} recorded inputs), "
              f"{differ}/{correct.numel()} elements differ between plant and correct, max |diff| "
              f"{float((correct.float() - wrong.float()).abs().max()):.4g}")


def cmd_dump(args):
    version = importlib.metadata.version("mindstudio-probe")
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    config = {
        "task": "tensor", "dump_path": os.path.join(out, "dump"), "rank": [], "step": [0], "level": "L1",
        "async_dump": False, "tensor": {"scope": [], "list": [], "data_mode": ["all"]},
        "risk_level": args.risk_level,  # msprobe 26.2.0 (default FOCUS skips its LOW-risk APIs); 8.3.2 ignores it
    }
    config_path = os.path.join(out, "config.json")
    with open(config_path, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=4)
    deterministic()
    counts = install_plants(args.variant)  # before msprobe wraps the APIs
    from msprobe.pytorch import PrecisionDebugger

    data = build()
    debugger = PrecisionDebugger(config_path=config_path)
    torch.manual_seed(SEED)  # msprobe may draw random numbers
    counts.clear()
    debugger.start()
    loss = step(data)
    debugger.stop()
    debugger.step()
    assert counts == EXPECTED_COUNTS, f"calls of the wrapped APIs: {counts} != {EXPECTED_COUNTS}"
    found = sorted(glob.glob(os.path.join(out, "dump", "**", "dump.json"), recursive=True))
    assert len(found) == 1, f"expected one dump.json under {out}/dump, found {found}"
    dump_json = os.path.abspath(found[0])
    verify_dump(dump_json, args.variant, every_call=args.risk_level == "ALL" or version.startswith("8."))
    entries = load_dump(dump_json)["data"]
    forward_names = [k for k in entries if k.endswith(".forward")]
    print(f"msprobe {version}, variant {args.variant}: {len(entries)} entries "
          f"({len(forward_names)} forward, {len(entries) - len(forward_names)} backward), planted {', '.join(PLANTED)}")
    print(f"loss {float(loss.detach()):.9g}")
    print(dump_json)


# ---------------------------------------------------------------------------------------------
# patch

FLOATING = {"torch.float16", "torch.bfloat16", "torch.float32", "torch.float64"}


def floating(outputs):
    """Whether a dump entry's output is a floating tensor or a tuple of floating tensors."""
    flat = []
    for desc in outputs:
        flat.extend(desc["value"] if isinstance(desc, dict) and desc.get("type") in ("tuple", "list") else [desc])
    return bool(flat) and all(isinstance(d, dict) and d.get("dtype") in FLOATING for d in flat)


def to64(x):
    if isinstance(x, torch.Tensor):
        return x.detach().to(torch.float64) if x.is_floating_point() else x
    if isinstance(x, (tuple, list)):
        return type(x)(to64(t) for t in x)
    if isinstance(x, dict):
        return {k: to64(v) for k, v in x.items()}
    return x


def other_rounding(ref, dtype):
    """Each element of ref (float64) rounded to dtype the other way: of the two values of dtype
    around it, the one that is not the nearest (ties: not round-to-nearest-even's); an element
    that dtype represents exactly (or that is not finite) is ref itself."""
    r = ref.to(dtype)
    rd = r.to(torch.float64)
    up, down = torch.nextafter(r, torch.full_like(r, math.inf)), torch.nextafter(r, torch.full_like(r, -math.inf))
    below, above = torch.where(rd < ref, r, down), torch.where(rd < ref, up, r)
    to_below, to_above = ref - below.to(torch.float64), above.to(torch.float64) - ref
    nearest_below = (to_below < to_above) | ((to_below == to_above) & (below == r))
    other = torch.where(nearest_below, above, below)
    return torch.where((rd == ref) | ~torch.isfinite(ref), r, other)


def replace(out, ref, flip=False):
    """out's value replaced exactly by ref cast to out's dtype (flip: rounded the other way, see
    other_rounding); the gradient still flows to out."""
    if isinstance(out, torch.Tensor):
        value = other_rounding(ref, out.dtype) if flip else ref.to(out.dtype)
        return value + (out - out.detach())
    return type(out)(replace(o, r, flip) for o, r in zip(out, ref))


class Patcher:
    """Wraps the dump's APIs, names their outermost calls as msprobe does, patches one of them."""

    def __init__(self, apis, plant_counts):
        self.depth, self.counts, self.seen, self.target, self.flip, self.plant_counts = 0, {}, [], None, False, plant_counts
        for api in apis:
            self.wrap(api)

    def wrap(self, api):
        prefix, attr = api.split(".", 1)
        module = PREFIX_MODULE[prefix]
        current = getattr(module, attr)
        correct = REAL.get(api, current)

        def call(*args, **kwargs):
            if self.depth:
                return current(*args, **kwargs)
            n = self.counts.get(api, 0)
            self.counts[api] = n + 1
            name = f"{api}.{n}"
            self.seen.append(name)
            self.depth += 1
            try:
                out = current(*args, **kwargs)
                if name == self.target:
                    with torch.no_grad():
                        ref = correct(*to64(args), **to64(kwargs))
                    out = replace(out, ref, self.flip)
            finally:
                self.depth -= 1
            return out

        call.__name__ = attr
        setattr(module, attr, call)

    def run(self, data, target=None, flip=False):
        """One step (forward and backward, as dumped), call `target` patched (flip: its output
        rounded the other way instead); the loss."""
        self.counts, self.seen, self.target, self.flip = {}, [], target, flip
        self.plant_counts.clear()
        params = data[0]
        for t in [params["wte"], params["wpe"], params["lnf_w"], params["lnf_b"], params["head_w"]] + [
                t for blk in params["blocks"] for t in blk.values()]:
            t.grad = None
        return float(step(data).detach())


def cmd_patch(args):
    start = time.time()
    deterministic()
    dump = load_dump(args.dump)["data"]
    forward_names = [k[: -len(".forward")] for k in dump if k.endswith(".forward")]
    apis = sorted({name.rsplit(".", 1)[0] for name in forward_names})
    counts = install_plants(args.variant)
    patcher = Patcher(apis, counts)
    data = build()
    loss = patcher.run(data)
    if patcher.seen != forward_names:
        first = next((i for i, (a, b) in enumerate(zip(patcher.seen, forward_names)) if a != b), min(len(patcher.seen), len(forward_names)))
        sys.exit(f"the intercepted calls are not the dump's forward calls: first difference at {first}: "
                 f"{patcher.seen[first:first + 3]} vs {forward_names[first:first + 3]} ({len(patcher.seen)} vs {len(forward_names)} calls)")
    # The loss: the last cross_entropy call.
    loss_name = [name for name in forward_names if name.startswith("Functional.cross_entropy.")][-1]
    recorded = float(load_arg(os.path.dirname(os.path.abspath(args.dump)), dump[loss_name + ".forward"]["output"][0]))
    assert recorded == loss, f"unpatched loss {loss!r} != the dump's recorded loss {recorded!r} (variant? dump?)"
    patched = [name for name in forward_names if floating(dump[name + ".forward"]["output"])]
    changes = {name: patcher.run(data, name) - loss for name in patched}
    # The step's rounding noise: each call's output rounded the other way, one run per call.
    flips = {name: patcher.run(data, name, flip=True) - loss for name in patched}
    assert counts == EXPECTED_COUNTS, f"calls of the wrapped APIs in the last run: {counts} != {EXPECTED_COUNTS}"
    noise_call = max(flips, key=lambda name: abs(flips[name]))
    result = {"variant": args.variant, "loss": loss, "changes": changes, "planted": PLANTED,
              "noise": abs(flips[noise_call]), "noise_call": noise_call, "flips": flips}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    top = sorted(changes.items(), key=lambda kv: -abs(kv[1]))[:5]
    print(f"{args.variant}: loss {loss:.9g}, {len(changes)} calls patched and flipped in {time.time() - start:.1f} s; "
          f"noise {abs(flips[noise_call]):.3g} ({noise_call}); top changes: " + ", ".join(f"{k} {v:+.3g}" for k, v in top))
    print(os.path.abspath(args.out))


# ---------------------------------------------------------------------------------------------
# names, compare

def cmd_names(args):
    sets = [(path, list(load_dump(path)["data"])) for path in args.dumps]
    first_path, first = sets[0]
    ok = True
    for path, names in sets[1:]:
        if set(names) != set(first):
            ok = False
            print(f"DIFFER {path} vs {first_path}: only in the first {sorted(set(names) - set(first))[:10]}, "
                  f"only in the second {sorted(set(first) - set(names))[:10]}")
        elif names != first:
            print(f"same names, different order: {path} vs {first_path}")
    print(f"{len(first)} names; {'identical sets in all' if ok else 'sets differ'} ({len(sets)} dumps)")
    if not ok:
        sys.exit(1)


def compare_commands(version, npu, bench, out):
    """msprobe's compare command lines of this msprobe version (see the module docstring)."""
    msprobe = [sys.executable, "-m", "msprobe.msprobe"]
    if int(version.split(".")[0]) >= 26:
        # 26.x: `msprobe compare -tp TARGET -gp GOLDEN` (dump.json against dump.json: pt_compare);
        # a .csv by default, an .xlsx with --xlsx. There is no `-f pytorch` nor `-i compare.json`.
        base = msprobe + ["compare", "-tp", npu, "-gp", bench, "-o", out]
        return [base, base + ["--xlsx"]]
    # 8.x: `msprobe -f pytorch compare -i compare.json -o DIR`, an .xlsx only (and advisor_*.txt);
    # -hl colours the failing rows red and the suspicious ones yellow.
    config_path = os.path.join(out, "compare.json")
    with open(config_path, "w", encoding="utf-8") as f:
        json.dump({"npu_path": npu, "bench_path": bench, "is_print_compare_log": True}, f, indent=4)
    return [msprobe + ["-f", "pytorch", "compare", "-i", config_path, "-o", out, "-hl"]]


def read_table(path):
    """The rows of a compare result (.csv or .xlsx) and, for an .xlsx, each row's fill colour."""
    if path.endswith(".csv"):
        import csv

        with open(path, encoding="utf-8-sig", newline="") as f:
            rows = list(csv.reader(f))
        return rows, [None] * len(rows)
    import openpyxl

    sheet = openpyxl.load_workbook(path).active
    rows, fills = [], []
    for row in sheet.iter_rows():
        rows.append(["" if c.value is None else str(c.value) for c in row])
        fills.append(row[0].fill.fgColor.rgb if row[0].fill is not None and row[0].fill.fill_type else None)
    return rows, fills


def summarize(path):
    from collections import Counter

    rows, fills = read_table(path)
    header, body = rows[0], rows[1:]
    print(f"{path}: {len(body)} rows; header: {header}")
    for column in ("Result", "Accuracy Reached or Not"):
        if column in header:
            i = header.index(column)
            print(f"  {column}: {dict(Counter(r[i] for r in body))}")
            bad = [r[0] for r in body if r[i] in ("error", "warning")]
            if bad:
                print(f"  not pass: {bad}")
    colours = Counter(f for f in fills[1:] if f)
    if colours:
        print(f"  highlighted rows: {dict(colours)} (FFFF0000 red, 00FFFF00 yellow); red: "
              f"{[r[0] for r, f in zip(body, fills[1:]) if f == 'FFFF0000'][:8]} ...")


def cmd_compare(args):
    version = importlib.metadata.version("mindstudio-probe")
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    before = set(os.listdir(out))
    for cmd in compare_commands(version, os.path.abspath(args.npu), os.path.abspath(args.bench), out):
        print("+", " ".join(cmd), file=sys.stderr)
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"msprobe compare failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
        time.sleep(1.1)  # the result files are named by the second
    written = sorted(set(os.listdir(out)) - before)
    for name in written:
        if name.startswith("compare_result_"):
            summarize(os.path.join(out, name))
    print(f"msprobe {version} compare wrote:")
    for name in written:
        print(os.path.join(out, name))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("dump")
    p.add_argument("--variant", choices=("faulty", "clean"), required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--risk-level", default="ALL", choices=("ALL", "FOCUS", "CORE"), help="msprobe 26.2.0's risk_level (default ALL)")
    p = sub.add_parser("patch")
    p.add_argument("--variant", choices=("faulty", "clean"), required=True)
    p.add_argument("--dump", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("compare")
    p.add_argument("--npu", required=True)
    p.add_argument("--bench", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("names")
    p.add_argument("dumps", nargs="+")
    args = parser.parse_args()
    {"dump": cmd_dump, "patch": cmd_patch, "compare": cmd_compare, "names": cmd_names}[args.cmd](args)


if __name__ == "__main__":
    main()
