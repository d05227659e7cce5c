"""Shared helpers of the package's tests: a stand-in for a generated
script's head (the module the machinery reads as ``call``)."""

import types

import pytest


def make_call(**names):
    """A module carrying a head's names, with a forward float32 call's settings by default."""
    call = types.ModuleType("head")
    defaults = dict(API_NAME="Torch.add.0", PROPAGATION="forward", DATA_MODE="random_data", RANDOM_SEED=42, ITER_TIMES=1,
                    COSINE_THRESHOLD=0.99, MAX_ABS_ERR_THRESHOLD=0.001, STANDARD="msprobe", API_OP="Torch.add",
                    EXACT_OP=False, UNDEFINED_OUTPUTS=None, CLASS_TARGETS=False, TOKEN_MASK=False, DATA_DIR=None, SOURCE_DUMP="dump.json",
                    BENCH_TAKES_MINDSPORE_NAMES=False, DUMP_DEVICE="cpu")
    defaults.update(names)
    for key, value in defaults.items():
        setattr(call, key, value)
    return call


@pytest.fixture
def call():
    return make_call()
