"""The machinery of msprobe-rs 0.1.0's pytorch repro scripts, written once by
`op_generate --shared-module` for the scripts of this output folder, which import
it (generated from python/msprobe_rs/repro/: do not edit; `--check` compares it).
"""

import argparse
import csv
import datetime
import io
import math
import os
import pickle
import re
import sys
import tempfile
import traceback

import numpy as np
import torch

try:
    import torch_npu  # noqa: F401  (registers the NPU device on Ascend)
except ImportError:
    torch_npu = None
