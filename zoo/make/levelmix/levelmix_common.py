"""Shared harness of the level-mix models (small_cnn.py, small_transformer.py): one training
step of an nn.Module dumped by msprobe at level "mix" (module hooks, as L0, plus API hooks, as L1).

Every model script is run as

    python <model>.py <msprobe config.json> <dump_path>

with msprobe (8.3.2 or 26.2.0) on PYTHONPATH. The config is copied to a temporary file with its
`dump_path` replaced, so the configs in zoo/make/levelmix/ stay free of machine paths. The dump
lands in <dump_path>/step0/rank/ (msprobe 8.3.2) or <dump_path>/step0/proc<PID>/ (msprobe 26.x,
not distributed): dump.json, stack.json, construct.json, and dump_tensor_data/ for task "tensor".
"""
import json
import os
import sys
import tempfile

import torch

from msprobe.pytorch import PrecisionDebugger, seed_all

SEED = 1234


def setup():
    """Parse argv, seed everything, create the debugger (before the model is built)."""
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} <msprobe config.json> <dump_path>")
    config_path, dump_path = sys.argv[1], sys.argv[2]
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)
    config["dump_path"] = os.path.abspath(dump_path)
    fd, tmp = tempfile.mkstemp(suffix=".json", prefix="msprobe_levelmix_")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=4)
    # seed_all seeds random/numpy/torch (8.3.2's NPU branch logs an error on a machine without
    # torch_npu after the seeds are set), so seed torch again to be explicit.
    seed_all(seed=SEED)
    torch.manual_seed(SEED)
    debugger = PrecisionDebugger(config_path=tmp)
    os.unlink(tmp)
    return debugger


def generator(seed=0):
    return torch.Generator().manual_seed(seed)


def _step(model, optimizer, compute_loss):
    loss = compute_loss()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


def train_step(debugger, model, optimizer, compute_loss):
    """One undumped warm-up step (so SGD's momentum buffers exist), then one dumped step:
    forward + loss, backward, optimizer step. Level mix hooks the modules of `model`, so it is
    passed to start()."""
    model.train()
    warm = _step(model, optimizer, compute_loss)
    debugger.start(model)
    loss = _step(model, optimizer, compute_loss)
    debugger.stop()
    debugger.step()
    print("warm-up loss", float(warm.detach()), "dumped step loss", float(loss.detach()))
