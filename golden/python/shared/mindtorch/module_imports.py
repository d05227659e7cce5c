"""The machinery of msprobe-rs 0.1.0's mindtorch repro scripts, written once by
`op_generate --shared-module` for the scripts of this output folder, which import
it (generated from python/msprobe_rs/repro/: do not edit; `--check` compares it).
"""

import argparse
import csv
import datetime
import importlib
import io
import math
import os
import pickle
import re
import sys
import tempfile
import traceback

import numpy as np
import mindspore
