"""SingleSave: msprobe 8.3.2's reinforcement-learning data collection
(``msprobe/core/single_save/single_saver.py``), same names and layout:

    {dump_path}/data/{key}/step{S}/rank{R}/micro_step{M}/{key}.npy   (a tensor)
                                                         {key}.{i}.npy (list/tuple element i)
                                                         {key}.{k}.npy (dict entry k)
                                                         {key}.json    {"data": stats}
    {dump_path}/configurations.json                                    (save_config)

Differences from msprobe (each fixes a bug; see python/README.md):
the rank is read at every save, not frozen at the first construction; keys
and values are all checked before anything is written, and a bad one raises;
files are written atomically; arrays keep their dtype (bf16 as float32).
"""

import logging
import os
import re
import threading
from collections import defaultdict
from collections.abc import Mapping

from . import _files
from ._tensors import describe, is_tensor, prepare

logger = logging.getLogger("msprobe_rs")

FRAMEWORKS = ("pytorch", "mindspore")
# A key (and a dict entry's key) becomes a folder and file names: these
# characters only (msprobe's path pattern without "/"), and never "." or "..".
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_MAX_FILE_NAME = 255
_RANK_ENV = ("RANK", "RANK_ID")


def _check_name(name, what):
    if not isinstance(name, str):
        raise TypeError(f"SingleSave: {what} must be a str, got {describe(name)}")
    if not _NAME.fullmatch(name) or name in (".", ".."):
        raise ValueError(
            f"SingleSave: {what} {name!r} is not allowed: use letters, digits, '_', '.' and '-' only "
            "(it becomes a folder or file name), and not '.' or '..'"
        )


def _check_file_name(name, key):
    if len(name.encode()) > _MAX_FILE_NAME:
        raise ValueError(f"SingleSave: key {key!r} makes the file name {name!r} longer than {_MAX_FILE_NAME} bytes")


def _plan(key, value):
    """Checks one (key, value) and converts it, before anything is written.

    Returns ([(file name, array)], stats) where stats is what
    ``{key}.json`` holds under "data".
    """
    _check_name(key, "key")
    _check_file_name(key + ".json", key)
    if is_tensor(value):
        arr, stats = prepare(value)
        _check_file_name(key + ".npy", key)
        return [(key + ".npy", arr)], stats
    if isinstance(value, (list, tuple)):
        files, stats = [], []
        for i, element in enumerate(value):
            if not is_tensor(element):
                raise TypeError(f"SingleSave: Unsupported type: {describe(element)} (element {i} of key {key!r}; elements must be tensors)")
            arr, s = prepare(element)
            name = f"{key}.{i}.npy"
            _check_file_name(name, key)
            files.append((name, arr))
            stats.append(s)
        return files, stats
    if isinstance(value, dict):
        files, stats = [], {}
        for k, element in value.items():
            if isinstance(k, bool) or not isinstance(k, (str, int)):
                raise TypeError(f"SingleSave: dict keys must be str or int, got {describe(k)} in key {key!r}")
            _check_name(str(k), f"dict key of {key!r}")
            if not is_tensor(element):
                raise TypeError(f"SingleSave: Unsupported type: {describe(element)} (entry {k!r} of key {key!r}; entries must be tensors)")
            arr, s = prepare(element)
            name = f"{key}.{k}.npy"
            _check_file_name(name, key)
            files.append((name, arr))
            stats[k] = s
        return files, stats
    raise TypeError(
        f"SingleSave: value of key {key!r} should be a tensor, or a list, tuple or dict of tensors, got {describe(value)}"
    )


def _env_rank():
    for var in _RANK_ENV:
        raw = os.environ.get(var)
        if raw is None or raw.strip() == "":
            continue
        try:
            rank = int(raw)
        except ValueError:
            rank = -1
        if rank >= 0:
            return rank
        logger.warning("SingleSave: ignoring %s=%r (not a rank number)", var, raw)
    return 0


def current_rank(fmk):
    """The rank now: the framework's communication group when it is
    initialised, else env RANK, else RANK_ID, else 0. Never imports a framework."""
    import sys

    if fmk == "pytorch":
        torch = sys.modules.get("torch")
        dist = getattr(torch, "distributed", None) if torch is not None else None
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    else:
        comm = sys.modules.get("mindspore.communication")
        if comm is not None and getattr(comm.GlobalComm, "INITED", False):
            return int(comm.get_rank())
    return _env_rank()


class SingleSave:
    """Process-wide singleton, as in msprobe: the first ``SingleSave(dump_path, fmk)``
    sets the folder; later calls return the same object (with a warning if
    they name another folder or framework). ``save``, ``save_ex``,
    ``save_config`` and ``step`` are class methods."""

    _instance = None
    _lock = threading.RLock()

    def __new__(cls, dump_path, fmk="pytorch"):
        with cls._lock:
            path = os.fspath(dump_path)
            if cls._instance is not None:
                inst = cls._instance
                if os.path.abspath(path) != inst.dump_path or fmk != inst.fmk:
                    logger.warning(
                        "SingleSave is already set up with dump_path=%r, fmk=%r; ignoring dump_path=%r, fmk=%r",
                        inst.dump_path, inst.fmk, path, fmk,
                    )
                return inst
            if fmk not in FRAMEWORKS:
                raise ValueError(f"SingleSave: fmk must be one of {list(FRAMEWORKS)}, got {fmk!r}")
            if not isinstance(path, str) or not path:
                raise ValueError(f"SingleSave: dump_path must be a non-empty path, got {dump_path!r}")
            _files.make_dirs(path)
            inst = super().__new__(cls)
            inst.dump_path = os.path.abspath(path)  # a later os.chdir does not move the dump
            inst.fmk = fmk
            inst.step_count = 0
            inst.tag_count = defaultdict(int)
            cls._instance = inst
            return inst

    @property
    def rank(self):
        """The rank the next save writes under (read at each save)."""
        return current_rank(self.fmk)

    @classmethod
    def _require(cls):
        inst = cls._instance
        if inst is None:
            raise RuntimeError("SingleSave: call SingleSave(dump_path, fmk) before SingleSave.save/save_ex/save_config/step")
        return inst

    @classmethod
    def _check_data(cls, data):
        if not isinstance(data, Mapping):
            raise TypeError(f"SingleSave: data must be a dict of key -> value, got {describe(data)}")
        return list(data.items())

    @classmethod
    def _write(cls, inst, planned, micro_batch_of):
        rank = current_rank(inst.fmk)
        for key, (files, stats) in planned:
            folder = os.path.join(inst.dump_path, "data", key, f"step{inst.step_count}", f"rank{rank}")
            micro = micro_batch_of(key)
            if micro is not None:
                folder = os.path.join(folder, f"micro_step{micro}")
            _files.make_dirs(folder)
            for name, arr in files:
                _files.write_npy(os.path.join(folder, name), arr)
            # The statistics last: a .json means its arrays are complete.
            _files.write_json(os.path.join(folder, key + ".json"), _files.json_text({"data": stats}))

    @classmethod
    def save(cls, data):
        """Saves each ``key: value`` of `data` under micro_step{M}, M = how many
        times that key was saved since the last ``step()``. Every key and
        value is checked and converted first: on an error nothing is written."""
        inst = cls._require()
        items = cls._check_data(data)
        with cls._lock:
            planned = [(key, _plan(key, value)) for key, value in items]
            counts = dict(inst.tag_count)
            cls._write(inst, planned, lambda key: counts.get(key, 0))
            for key, _ in planned:
                inst.tag_count[key] += 1

    @classmethod
    def save_ex(cls, data, micro_batch=None):
        """msprobe's lower-level save: micro_step{micro_batch}, or straight in the
        rank folder when micro_batch is None; does not count micro-steps."""
        inst = cls._require()
        if micro_batch is not None and (isinstance(micro_batch, bool) or not isinstance(micro_batch, int) or micro_batch < 0):
            raise ValueError(f"SingleSave: micro_batch must be None or an int >= 0, got {micro_batch!r}")
        items = cls._check_data(data)
        with cls._lock:
            planned = [(key, _plan(key, value)) for key, value in items]
            cls._write(inst, planned, lambda key: micro_batch)

    @classmethod
    def save_config(cls, data):
        """Writes `data` to {dump_path}/configurations.json (indent 4)."""
        inst = cls._require()
        text = _files.json_text(data)  # not JSON-serialisable: raises before writing
        with cls._lock:
            _files.write_json(os.path.join(inst.dump_path, "configurations.json"), text)

    @classmethod
    def step(cls):
        """Next step: step{S+1}, and every key's micro-step count restarts at 0."""
        inst = cls._require()
        with cls._lock:
            inst.tag_count = defaultdict(int)
            inst.step_count += 1
