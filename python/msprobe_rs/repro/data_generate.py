"""The inputs of a repro script: the dumped values as specs (``TensorSpec``,
``DType``, ...), and the values made from them (``Master``): random data in
the dumped range (``random_array``), or the dump's tensor files (real_data),
read so that no pickle runs (``read_tensor_file``). msprobe's own checker
makes its inputs in run_ut/data_generate.py.
"""

import io
import math
import os
import pickle

import numpy as np
import torch

from ._tables import DTYPE_TABLE, INT_RANGES, RULEBOOK

# --- msprobe-rs: the scripts inline this file from here ---


class TensorSpec:
    """A dumped tensor: dtype, shape, value range and (tensor dumps) its file."""

    def __init__(self, dtype, shape, low=None, high=None, requires_grad=None, data_name=None):
        self.dtype = dtype
        self.shape = tuple(int(d) for d in shape)
        self.low = low
        self.high = high
        self.requires_grad = requires_grad
        self.data_name = data_name


class DType:
    """A dtype argument, by name in the dump's spelling."""

    def __init__(self, name):
        self.name = name


class Device:
    """A device argument: the tested run uses its own device, the bench the CPU."""

    def __init__(self, name):
        self.name = name


class Size:
    """A torch.Size argument."""

    def __init__(self, dims):
        self.dims = list(dims)


class MemoryFormat:
    """A torch.memory_format argument, by name."""

    def __init__(self, name):
        self.name = name


class Unsupported:
    """A value msprobe could not record (or this tool cannot replay): passed as None."""

    def __init__(self, type_name):
        self.type_name = type_name


class Master:
    """A tensor's values as a numpy array (float64, int64 or bool) plus its spec;
    both the tested and the bench tensors are made from it."""

    def __init__(self, spec, array):
        self.spec = spec
        self.array = array


# dtype name (both frameworks' spellings) -> (canonical name, kind)
DTYPES = {name: (canon, kind) for canon, kind, names in DTYPE_TABLE for name in names}


def dtype_info(name):
    if name not in DTYPES:
        raise ValueError(f"unsupported dtype {name!r}")
    return DTYPES[name]


def _num(x):
    """A statistic as a float (bools count as 0/1), or None."""
    if x is None:
        return None
    return float(x)


def random_array(spec, rng):
    """Values drawn uniformly from the dumped [Min, Max], with Min and Max
    themselves placed first and last. Non-finite statistics are kept: an
    infinite Max puts +inf last, an infinite Min puts -inf first, and a NaN
    statistic puts one NaN in the middle; the rest is drawn from a finite range.
    A complex tensor's parts are drawn so, as the float pairs of its shape."""
    canon, kind = dtype_info(spec.dtype)
    shape = spec.shape
    size = int(np.prod(shape)) if shape else 1
    low, high = _num(spec.low), _num(spec.high)
    if kind == "bool":
        if high == 0:
            return np.zeros(shape, dtype=bool)
        if low == 1:
            return np.ones(shape, dtype=bool)
        return rng.integers(0, 2, size=shape).astype(bool)
    complex_parts = kind == "complex"
    if complex_parts:
        # msprobe's Max of a complex tensor is its largest modulus: each part, real and imaginary,
        # is drawn as a float from [-Max, Max] (as the runtime draws them).
        shape, size, kind = tuple(shape) + (2,), size * 2, "float"
        if high is not None:
            low, high = -abs(high), abs(high)
    specials = []
    ranges = RULEBOOK["random_data"]
    if low is None or high is None:
        low, high = ranges["float_without_stats"] if kind == "float" else ranges["int_without_stats"]
    if math.isnan(low) or math.isnan(high):
        specials.append((size // 2, float("nan")))
        low, high = ranges["after_a_nan_stat"]
    if math.isinf(high):
        specials.append((size - 1, high))
        high = abs(low) if math.isfinite(low) else 1.0
    if math.isinf(low):
        specials.append((0, low))
        low = -abs(high)
    if low > high:
        low, high = high, low
    if kind == "int":
        lo_lim, hi_lim = INT_RANGES[canon]
        hi_lim = min(hi_lim, 2**63 - 1)  # drawn as int64
        lo, hi = max(int(math.ceil(low)), lo_lim), min(int(math.floor(high)), hi_lim)
        if lo > hi:
            lo = hi = min(max(int(round(low)), lo_lim), hi_lim)
        array = np.asarray(rng.integers(lo, hi, size=shape, dtype=np.int64, endpoint=True))
        ends = (lo, hi)
    else:
        mid, half = low / 2 + high / 2, high / 2 - low / 2
        array = np.asarray(mid + half * (2.0 * rng.random(size=shape) - 1.0), dtype=np.float64)
        ends = (low, high)
    flat = array.reshape(-1)
    if flat.size:
        flat[0], flat[-1] = ends
        for index, value in specials:
            flat[index] = value
    if complex_parts:
        return array[..., 0] + 1j * array[..., 1]
    return array


class InputError(Exception):
    """A tensor file the run cannot use: the script prints one line and
    exits with EXIT_INPUT, writing no CSV."""

    def __init__(self, path, problem):
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def first_line(exc):
    return (str(exc).strip().splitlines() or [""])[0]


def unsafe_reason(exc):
    """The line of torch's weights_only refusal that names what the pickle wanted."""
    lines = [line.strip() for line in str(exc).splitlines() if "GLOBAL" in line]
    return lines[0] if lines else first_line(exc)


def read_tensor_file(path):
    """The array in a .npy file (no pickles) or a .pt file (torch.load with
    weights_only=True: a pickle that would call anything is refused). The
    file is read first, so that what cannot be read is told apart from what
    cannot be parsed."""
    try:
        with open(path, "rb") as f:
            data = io.BytesIO(f.read())
    except FileNotFoundError:
        raise InputError(path, "no such file (--data-dir names the dump's tensor folder)") from None
    except OSError as exc:
        raise InputError(path, f"cannot read it: {exc.strerror or first_line(exc)}") from None
    try:
        if path.endswith(".npy"):
            array = np.load(data, allow_pickle=False)
        else:
            tensor = torch.load(data, map_location="cpu", weights_only=True)
            if not isinstance(tensor, torch.Tensor):
                raise InputError(path, f"holds a {type(tensor).__name__}, not a tensor")
            if tensor.dtype == torch.bfloat16 or tensor.dtype == torch.float16:
                tensor = tensor.to(torch.float32)
            array = tensor.detach().numpy()
    except InputError:
        raise
    except pickle.UnpicklingError as exc:
        raise InputError(path, f"refused: not a plain tensor file ({unsafe_reason(exc)})") from None
    except Exception as exc:  # torch and numpy report truncated or malformed files in many ways
        detail = first_line(exc)
        raise InputError(path, f"truncated or malformed: {type(exc).__name__}{': ' + detail if detail else ''}") from None
    if array.dtype.kind not in "biufc":
        raise InputError(path, f"holds {array.dtype} values, not numbers")
    return array


def load_array(spec, data_dir, api_name):
    """The dumped tensor from its .pt (PyTorch) or .npy (MindSpore) file;
    api_name names the call when the spec has no file."""
    if not spec.data_name:
        raise InputError(api_name, "an input has no tensor file (data_name): real_data needs a tensor dump")
    if data_dir is None:
        raise InputError(spec.data_name, "no tensor folder is known: pass --data-dir")
    # Tensor files are read only from inside the tensor folder (msprobe-rs's
    # rule; the dump's data_name is someone else's text).
    name = spec.data_name
    if name in (".", "..") or "/" in name or "\\" in name or "\0" in name or os.path.isabs(name) or os.path.splitdrive(name)[0]:
        raise InputError(name, "refused: a tensor file name must be a bare file name in the dump's tensor folder")
    path = os.path.join(data_dir, name)
    folder, resolved = os.path.realpath(data_dir), os.path.realpath(path)
    if os.path.commonpath([folder, resolved]) != folder:
        raise InputError(path, f"refused: it resolves to {resolved}, outside the tensor folder {folder}")
    array = read_tensor_file(path)
    if tuple(array.shape) != spec.shape:
        raise InputError(path, f"shape {tuple(array.shape)} differs from the dumped {spec.shape}")
    _, kind = dtype_info(spec.dtype)
    if kind == "float":
        return array.astype(np.float64)
    if kind == "int":
        return array.astype(np.int64)
    return array


class Realizer:
    """Turns spec trees into Master values. In random_data mode each tensor
    gets its own random stream, seeded by (the script's RANDOM_SEED,
    iteration, ordinal): every tensor and every iteration differs, and a
    rerun reproduces them. call is the script (DATA_MODE, RANDOM_SEED, API_NAME)."""

    def __init__(self, call, iteration, data_dir):
        self.iteration = iteration
        self.data_mode = call.DATA_MODE
        self.seed = call.RANDOM_SEED
        self.api_name = call.API_NAME
        self.data_dir = data_dir
        self.ordinal = 0

    def __call__(self, value):
        if isinstance(value, TensorSpec):
            self.ordinal += 1
            if self.data_mode == "real_data":
                return Master(value, load_array(value, self.data_dir, self.api_name))
            rng = np.random.default_rng([self.seed, self.iteration, self.ordinal])
            return Master(value, random_array(value, rng))
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self(v) for v in value)
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        return value


def fold_class_targets(args, kwargs):
    """Random class indices of cross_entropy/nll_loss (the second positional
    argument, integer) drawn from a dumped range whose Min is the ignore
    marker (-100) land between the marker and class 0, which torch and
    MindSpore refuse: such values become |v| mod (Max + 1), and the marker
    itself is kept (as msprobe-rs replay does)."""
    if len(args) < 2 or not isinstance(args[1], Master) or dtype_info(args[1].spec.dtype)[1] != "int":
        return
    ignore = kwargs.get("ignore_index", -100)
    values = args[1].array
    if values.size == 0:
        return
    top = max(int(values.max()), 0)
    folded = np.where((values < 0) & (values != ignore), np.abs(values) % (top + 1), values)
    args[1] = Master(args[1].spec, folded.astype(values.dtype))


def band_mask(kwargs, keys):
    """A random integer or bool mask of a fused attention in sparse_mode 0 becomes the mask
    of its token band: True (not attended) where j - i > next or i - j > pre over its last
    two dims (as msprobe-rs replay does): statistics cannot give the recorded mask back.
    keys are the call's (mask, pre, next) keywords: npu_fusion_attention's atten_mask,
    pre_tockens, next_tockens; flash_attention_score's attn_mask, pre_tokens, next_tokens."""
    mask_key, pre_key, next_key = keys
    mask = kwargs.get(mask_key)
    if kwargs.get("sparse_mode", 0) != 0 or not isinstance(mask, Master) or mask.array.ndim < 2:
        return
    if dtype_info(mask.spec.dtype)[1] not in ("bool", "int"):
        return
    pre, nxt = kwargs.get(pre_key, 2147483647), kwargs.get(next_key, 2147483647)
    if not (isinstance(pre, int) and isinstance(nxt, int)):
        return
    s1, s2 = mask.array.shape[-2:]
    i, j = np.arange(s1).reshape(s1, 1), np.arange(s2).reshape(1, s2)
    band = np.broadcast_to((j - i > nxt) | (i - j > pre), mask.array.shape)
    kwargs[mask_key] = Master(mask.spec, band.astype(mask.array.dtype))


def wants_grad(master, any_marked):
    """Which inputs the backward pass differentiates: float (and complex) tensors that were
    marked requires_grad in the dump, or, when the dump marks none (MindSpore
    dumps carry no requires_grad), every float tensor but those marked
    requires_grad=False (the generator marks the inputs whose recorded
    gradient is null, such as batch_norm's running statistics)."""
    _, kind = dtype_info(master.spec.dtype)
    if kind not in ("float", "complex"):
        return False
    return bool(master.spec.requires_grad) if any_marked else master.spec.requires_grad is not False


def any_marked(values):
    found = False
    for v in values:
        if isinstance(v, Master) and v.spec.requires_grad:
            found = True
        elif isinstance(v, (list, tuple)):
            found = found or any_marked(v)
    return found
