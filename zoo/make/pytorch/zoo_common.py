"""Shared harness of the PyTorch zoo models: one training step dumped by msprobe.

Every model script is run as

    python <model>.py <msprobe config.json> <dump_path>

The config is copied to a temporary file with its `dump_path` replaced, so the
configs in zoo/make/configs/ stay free of machine paths. The dump lands in
<dump_path>/step0/rank/ (dump.json, and dump_tensor_data/ for task "tensor").
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
    fd, tmp = tempfile.mkstemp(suffix=".json", prefix="msprobe_zoo_")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=4)
    # seed_all seeds random/numpy/torch; its NPU branch logs an error on a CPU-only
    # machine after the seeds are set, so seed torch again to be explicit.
    seed_all(seed=SEED)
    torch.manual_seed(SEED)
    debugger = PrecisionDebugger(config_path=tmp)
    os.unlink(tmp)
    return debugger


def generator(seed=0):
    return torch.Generator().manual_seed(seed)


def _step(model, optimizer, compute_loss, clip_norm):
    loss = compute_loss()
    loss.backward()
    if clip_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    optimizer.step()
    optimizer.zero_grad()
    return loss


def train_step(debugger, model, optimizer, compute_loss, clip_norm=None):
    """One dumped training step: forward + loss, backward, (clip), optimizer step.

    One undumped warm-up step runs first, so the dumped step sees a non-empty
    optimizer state (momentum buffers, Adam moments) and takes the code paths a
    long training run takes (the first SGD step only clones the momentum buffer).
    """
    model.train()
    warm = _step(model, optimizer, compute_loss, clip_norm)
    debugger.start()
    loss = _step(model, optimizer, compute_loss, clip_norm)
    debugger.stop()
    debugger.step()
    print("warm-up loss", float(warm.detach()), "dumped step loss", float(loss.detach()))
