"""ConfigChecker: msprobe 8.3.2's config_check collection
(``msprobe/core/config_check/``), same names and zip layout:

    env                                           json of os.environ (rank 0)
    pip                                           "Name=version" lines (rank 0)
    hyperparameters/hyperparameters_static.json   parsed shell_path files (rank 0)
    hyperparameters/hyperparameters_dynamic.json  Megatron get_args() (rank 0)
    dataset/step{S}/rank{R}/dataset.json          features of the forward inputs
    weights/step{S}/rank{R}/weight.json           {param: {max, min, mean, norm}}
    random/rank0.json                             {op: [{count, stack}]}

S counts forward calls of the hooked model (micro-steps), R is the rank.

    ConfigChecker.apply_patches(fmk)      # at the very start: random ops, Megatron get_args
    ConfigChecker(model=model, shell_path=[...], output_zip_path="./config_check_pack.zip", fmk="pytorch")

The shell/YAML hyperparameter parser is the Rust binary's
(``msprobe -f FMK config_check -d FILES -o ZIP``), so one parser serves the
CLI and this class; env, pip, weights, dataset and random are collected here,
in the training process. Every write replaces the zip atomically.

Differences from msprobe (see python/README.md): no duplicate entries when a
pack is written again; the rank is read at every forward (env RANK/RANK_ID
when the framework's group is not initialised); MindSpore's ``set_seed`` is
tracked under its own name; apply_patches twice does not wrap twice;
integer/float64 MindSpore tensors are reduced in float32 as torch's are.
"""

import functools
import inspect
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
from collections import defaultdict

import numpy as np

from . import _files
from ._tensors import _numpy_stats, describe
from .single_compare import MsprobeError, _arg_path, _error_line, find_binary
from .single_save import current_rank

logger = logging.getLogger("msprobe_rs")

FRAMEWORKS = ("pytorch", "mindspore")
_MAX_SHELL_PATHS = 100  # msprobe's EXTERN_INPUT_LIST_MAX_LEN
_MAX_DEPTH = 400  # msprobe's recursion limit for the dataset walk
_FEATURES = ("max", "min", "mean", "norm")
_STATIC_FILE = "hyperparameters/hyperparameters_static.json"
_DYNAMIC_FILE = "hyperparameters/hyperparameters_dynamic.json"


def _log(msg):
    logger.info("[config checking log] %s", msg)


def _check_fmk(fmk):
    if fmk not in FRAMEWORKS:
        raise ValueError(f"ConfigChecker: fmk must be one of {list(FRAMEWORKS)}, got {fmk!r}")


# ---------------------------------------------------------------------------
# Tensor features (msprobe's FmkAdp.process_tensor and get_tensor_features)

def _is_tensor(obj, fmk):
    if fmk == "pytorch":
        torch = sys.modules.get("torch")
        return torch is not None and isinstance(obj, torch.Tensor)
    ms = sys.modules.get("mindspore")
    return ms is not None and isinstance(obj, getattr(ms, "Tensor", ()))


def tensor_features(t, fmk):
    """{"max","min","mean","norm"} of a tensor as msprobe computes them: a
    non-floating or float64 tensor is reduced in float32, float32/16 and bf16
    in their own dtype (with the framework's own reductions, so the figures
    equal msprobe's bit for bit). None for an empty tensor (msprobe raises)."""
    if fmk == "pytorch":
        torch = sys.modules["torch"]
        with torch.no_grad():
            t = t.detach()
            if t.numel() == 0:
                return None
            if not t.is_floating_point() or t.dtype == torch.float64:
                t = t.float()
            return {"max": float(t.max()), "min": float(t.min()), "mean": float(t.mean()), "norm": float(t.norm())}
    ms = sys.modules["mindspore"]
    if int(np.prod(t.shape)) == 0:
        return None
    dt = t.dtype
    if dt == ms.bfloat16:
        # MindSpore's CPU kernels cannot reduce bf16: float32, rounded to bf16.
        return _numpy_stats(t.astype(ms.float32).asnumpy(), "bfloat16")
    r = t if dt in (ms.float32, ms.float16) else t.astype(ms.float32)
    return {k: float(getattr(r, k)().asnumpy()) for k in _FEATURES}


def collect_weights_data(model, fmk):
    """{param_name: features}, every parameter cast to float32 first (msprobe's
    weights_checker); empty parameters are left out."""
    out = {}
    if fmk == "pytorch":
        torch = sys.modules["torch"]
        for name, param in model.named_parameters():
            if param.dtype != torch.float32:
                param = param.detach().float()
            f = tensor_features(param, fmk)
            if f is not None:
                out[name] = f
    else:
        ms = sys.modules["mindspore"]
        for name, param in model.parameters_and_names():
            p = param if param.dtype == ms.float32 else param.astype(ms.float32)
            f = tensor_features(p, fmk)
            if f is not None:
                out[name] = f
    return out


def _json_key(k):
    return k if k is None or isinstance(k, (str, int, float, bool)) else str(k)


def process_obj(obj, fmk, depth=0):
    """msprobe's dataset_checker.process_obj: a tensor → its features, a
    list/tuple → {index: ...}, a dict → {key: ...}, anything else → ""."""
    if depth > _MAX_DEPTH:
        return ""
    if _is_tensor(obj, fmk):
        f = tensor_features(obj, fmk)
        return "" if f is None else f
    if isinstance(obj, (tuple, list)):
        return {i: process_obj(x, fmk, depth + 1) for i, x in enumerate(obj)}
    if isinstance(obj, dict):
        return {_json_key(k): process_obj(v, fmk, depth + 1) for k, v in obj.items()}
    return ""


def parse_args_and_kargs(args, kwargs, fmk):
    return {"args": process_obj(args, fmk), "kwargs": process_obj(kwargs, fmk)}


# ---------------------------------------------------------------------------
# Random operations (msprobe's random_checker)

# {op name: [{"count": n, "stack": [frame, ...]}]}
random_op_stats = defaultdict(list)
_random_lock = threading.Lock()
_random_state = {"recording": True, "written": False}
_WRAPPED = "_msprobe_rs_random_op"


def get_call_stack(frame):
    """The stack above `frame`, outermost first, each frame as
    "File {abspath}, line {lineno}, in {function}, {code line}"."""
    stack = []
    current = frame.f_back
    while current:
        info = inspect.getframeinfo(current)
        code_line = info.code_context[0].strip() if info.code_context else ""
        stack.append(f"File {os.path.abspath(info.filename)}, line {info.lineno}, in {info.function}, {code_line}")
        current = current.f_back
    return stack[::-1]


def track_random_call(func, name):
    """`func` wrapped so that each call counts its caller's stack under `name`."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if _random_state["recording"]:
            frame = inspect.currentframe()
            try:
                stack = get_call_stack(frame)
            finally:
                del frame
            with _random_lock:
                for entry in random_op_stats[name]:
                    if entry["stack"] == stack:
                        entry["count"] += 1
                        break
                else:
                    random_op_stats[name].append({"count": 1, "stack": stack})
        return func(*args, **kwargs)

    setattr(wrapper, _WRAPPED, name)
    return wrapper


def _patch(owner, attr, name):
    func = getattr(owner, attr, None)
    if func is None or getattr(func, _WRAPPED, None) is not None:
        return  # absent in this version, or already wrapped (apply_patches called again)
    setattr(owner, attr, track_random_call(func, name))


def _patch_random_ops(fmk):
    import random

    for attr in ("random", "randint", "uniform", "choice"):
        _patch(random, attr, f"random.{attr}")
    for attr in ("rand", "randint", "choice", "normal"):
        _patch(np.random, attr, f"np.random.{attr}")
    if fmk == "pytorch":
        import torch  # an explicit request for torch's patches, as in msprobe

        for attr in ("rand", "randint", "randn", "rand_like", "randint_like", "randn_like", "manual_seed"):
            _patch(torch, attr, f"torch.{attr}")
        for attr in ("exponential_", "geometric_", "log_normal_", "cauchy_"):
            _patch(torch.Tensor, attr, f"torch.Tensor.{attr}")
    else:
        import mindspore

        for attr in ("rand", "randint", "randn"):
            _patch(mindspore.ops, attr, f"mindspore.ops.{attr}")
        # msprobe installs its set_seed wrapper as mindspore.manual_seed, so real
        # set_seed calls go untracked; each function is wrapped under its own name.
        _patch(mindspore, "manual_seed", "mindspore.manual_seed")
        _patch(mindspore, "set_seed", "mindspore.set_seed")


# ---------------------------------------------------------------------------
# Megatron's get_args (the dynamic hyperparameters)

_megatron = {"args": None}


def _patch_megatron():
    try:
        from megatron import training
    except ImportError:
        _log("No megatron find.")
        return
    except Exception as e:  # noqa: BLE001 (msprobe logs any failure and goes on)
        _log(f"Patch megatron method failed, detail:{e}")
        return
    try:
        get_args = training.get_args
        if getattr(get_args, _WRAPPED, None) is not None:
            return

        @functools.wraps(get_args)
        def wrapper(*args, **kwargs):
            result = get_args(*args, **kwargs)
            if not _megatron["args"]:
                _megatron["args"] = result
            return result

        setattr(wrapper, _WRAPPED, "megatron.training.get_args")
        training.get_args = wrapper
    except Exception as e:  # noqa: BLE001
        _log(f"Patch megatron method failed, detail:{e}")


def _dynamic_hyperparameters():
    ns = _megatron["args"]
    if not ns:
        return None
    data = ns if isinstance(ns, dict) else getattr(ns, "__dict__", None)
    if data is None:
        return None
    return json.dumps(data, default=lambda x: None, indent=4)


# ---------------------------------------------------------------------------
# env, pip, static hyperparameters

def collect_env_data():
    return json.dumps(dict(os.environ), indent=4)


def collect_pip_data():
    from importlib import metadata

    result = ""
    for pkg in metadata.distributions():
        if pkg.metadata:
            result += f"{pkg.metadata.get('Name')}={pkg.version}\n"
    return result


def _shell_paths(shell_path):
    if not shell_path:
        return []
    if isinstance(shell_path, (str, os.PathLike)):
        shell_path = [shell_path]  # msprobe raises "input is not a list"
    if not isinstance(shell_path, (list, tuple)):
        raise TypeError(f"ConfigChecker: shell_path must be a list of paths, got {describe(shell_path)}")
    if len(shell_path) > _MAX_SHELL_PATHS:
        raise ValueError(f"ConfigChecker: shell_path has {len(shell_path)} paths, at most {_MAX_SHELL_PATHS} are allowed")
    paths = []
    for p in shell_path:
        if not isinstance(p, (str, os.PathLike)):
            raise TypeError(f"ConfigChecker: shell_path items must be paths, got {describe(p)}")
        paths.append(os.fspath(p))
    return paths


_PACKS_DIFFER = 9  # the binary's exit code when a required check is an error (its result is written)


def _run_binary(args, ok_codes=(0,)):
    binary = find_binary()
    cmd = [binary] + args
    sys.stdout.flush()
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stderr = proc.stderr.decode("utf-8", errors="replace")
    if proc.returncode not in ok_codes:
        line = _error_line(stderr) or f"msprobe {' '.join(args[:3])} exited with code {proc.returncode}"
        raise MsprobeError(line, proc.returncode, stderr, cmd)
    return proc.stdout.decode("utf-8", errors="replace"), stderr, proc.returncode


def static_hyperparameters(paths, fmk):
    """hyperparameters_static.json's text parsed by the msprobe-rs binary
    (``msprobe -f FMK config_check -d PATHS -o TMP.zip``), or None when it
    found none. Raises FileNotFoundError without the binary, MsprobeError
    when it fails."""
    import zipfile

    try:
        find_binary()
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{e}; ConfigChecker needs it to parse shell_path (or pass shell_path=None)") from None
    with tempfile.TemporaryDirectory(prefix="msprobe_rs_config_check_") as tmp:
        out = os.path.join(tmp, "static.zip")
        # Its stdout ("packed N environment variables, ...") is about the
        # temporary pack; its stderr (the parser's warnings) is passed on.
        _, stderr, _ = _run_binary(["-f", fmk, "config_check", "-d"] + [_arg_path(p) for p in paths] + ["-o", out])
        if stderr:
            sys.stderr.write(stderr)
        if not os.path.isfile(out):
            raise MsprobeError(f"msprobe config_check -d wrote no {out}", 0, stderr, None)
        with zipfile.ZipFile(out) as z:
            if _STATIC_FILE not in z.namelist():
                return None
            data = json.loads(z.read(_STATIC_FILE).decode("utf-8"))
    # msprobe's text (indent 4, ASCII), whatever the binary's layout.
    return json.dumps(data, indent=4)


# ---------------------------------------------------------------------------

class ConfigChecker:
    """msprobe 8.3.2's ``ConfigChecker``: ``apply_patches(fmk)`` at the start
    of training, then ``ConfigChecker(model=..., shell_path=[...],
    output_zip_path=..., fmk=...)`` once the model is built; ``compare``
    runs the binary's ``config_check -c``."""

    step = 0  # forward calls so far (micro-steps), shared like msprobe's
    _step_lock = threading.RLock()

    def __init__(self, model=None, shell_path=None, output_zip_path="./config_check_pack.zip", fmk="pytorch"):
        _check_fmk(fmk)
        self.fmk = fmk
        if isinstance(model, list):
            model = model[0] if model else None  # VPP chunks: only the first is hooked, as in msprobe
        if model is not None and not self._is_module(model):
            raise TypeError("model is not torch.nn.Module/mindspore.nn.Cell or module list.")
        self.model = model
        if isinstance(output_zip_path, os.PathLike):
            output_zip_path = os.fspath(output_zip_path)
        if not isinstance(output_zip_path, str) or not output_zip_path.endswith(".zip"):
            raise ValueError("output zip path must be a string and ends with '.zip'")
        self.shell_path = _shell_paths(shell_path)
        # Absolute, so that a later os.chdir does not move the pack.
        self.output_zip_path = os.path.abspath(output_zip_path)
        _files.make_dirs(os.path.dirname(self.output_zip_path))
        self._dynamic_written = False
        self.handle = None
        self.pack()

    def _is_module(self, model):
        if self.fmk == "pytorch":
            torch = sys.modules.get("torch")
            return torch is not None and isinstance(model, torch.nn.Module)
        ms = sys.modules.get("mindspore")
        return ms is not None and isinstance(model, ms.nn.Cell)

    @staticmethod
    def apply_patches(fmk="pytorch"):
        """Wraps the random functions (random, numpy.random and the framework's)
        to count their call stacks, and Megatron's get_args to capture the
        training arguments. Call it before anything else runs."""
        _check_fmk(fmk)
        _patch_random_ops(fmk)
        _patch_megatron()

    @staticmethod
    def compare(bench_zip_path, cmp_zip_path, output_path="./config_check_result", fmk="pytorch"):
        """``msprobe -f FMK config_check -c BENCH CMP -o OUT`` (the Rust binary):
        OUT/bench, OUT/cmp and OUT/result.xlsx. Returns True when every
        required check (env, pip, dataset, weights, hyperparameters) passed,
        False when one is an error (msprobe returns None; the result is
        written either way). Raises MsprobeError when the binary fails."""
        _check_fmk(fmk)
        stdout, stderr, code = _run_binary(
            ["-f", fmk, "config_check", "-c", _arg_path(bench_zip_path), _arg_path(cmp_zip_path), "-o", _arg_path(output_path)],
            ok_codes=(0, _PACKS_DIFFER),
        )
        sys.stdout.write(stdout)
        if stderr:
            sys.stderr.write(stderr)
        return code == 0

    def pack(self):
        _log(f"pack result zip path {os.path.realpath(self.output_zip_path)}")
        rank0 = current_rank(self.fmk) == 0
        entries = []
        if rank0:
            # env, pip, hyperparameters: rank 0 only (msprobe's multi_rank=False).
            entries.append(("env", collect_env_data()))
            entries.append(("pip", collect_pip_data()))
            if self.shell_path:
                text = static_hyperparameters(self.shell_path, self.fmk)
                if text is not None:
                    entries.append((_STATIC_FILE, text))
                    _log("add static hyperparameters args to zip")
                else:
                    _log(f"Warning: Failed to extract hyperparameters from script {self.shell_path}")
            dynamic = _dynamic_hyperparameters()
            if dynamic is not None:
                entries.append((_DYNAMIC_FILE, dynamic))
                self._dynamic_written = True
                _log("add dynamic hyperparameters args to zip")
        else:
            # random is rank 0's only: stop counting stacks nobody will write.
            _random_state["recording"] = False
        if entries:
            _files.update_zip(self.output_zip_path, entries)
            _log("add env args to zip")
            _log("add pip info to zip")
        if self.model is not None:
            self._register(self.model)

    def _register(self, model):
        if self.fmk == "pytorch":
            self.handle = model.register_forward_pre_hook(self._hook, with_kwargs=True)
            return
        original = model.construct
        hook = self._hook

        @functools.wraps(original)
        def construct(*args, **kwargs):
            hook(model, args, kwargs)
            return original(*args, **kwargs)

        model.construct = construct

    def _hook(self, model, args, kwargs):
        with ConfigChecker._step_lock:
            step = ConfigChecker.step
            self.collect(model, args, kwargs, step)
            ConfigChecker.step += 1

    def collect(self, model, args, kwargs, step):
        """One forward: dataset and weights of this rank, and on rank 0 at
        the first forward, the random-call stacks; one zip update."""
        rank = current_rank(self.fmk)
        entries = [
            (f"dataset/step{step}/rank{rank}/dataset.json", json.dumps(parse_args_and_kargs(args, kwargs, self.fmk), indent=4)),
            (f"weights/step{step}/rank{rank}/weight.json", json.dumps(collect_weights_data(model, self.fmk), indent=4)),
        ]
        if rank == 0:
            if not _random_state["written"]:
                with _random_lock:
                    text = json.dumps(dict(random_op_stats), indent=4)
                entries.append((f"random/rank{rank}.json", text))
                _random_state["written"] = True
                _random_state["recording"] = False  # nothing later is written
            if not self._dynamic_written:
                dynamic = _dynamic_hyperparameters()
                if dynamic is not None:
                    entries.append((_DYNAMIC_FILE, dynamic))
                    self._dynamic_written = True
        _files.update_zip(self.output_zip_path, entries)
        _log(f"add step{step} rank{rank} dataset and weights info to zip")
