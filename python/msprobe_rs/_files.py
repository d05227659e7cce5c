"""Atomic file writes: a temporary file in the target folder, then a rename,
so an interrupted process never leaves a half-written file under the final
name. Modes follow msprobe: folders 0o750, files 0o640."""

import json
import os
import shutil
import tempfile
import threading

import numpy as np

DIR_MODE = 0o750
FILE_MODE = 0o640


def make_dirs(path):
    """os.makedirs gives only the last folder the mode; every new one gets it here."""
    path = os.path.abspath(path)
    missing = []
    while not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for p in reversed(missing):
        try:
            os.mkdir(p, DIR_MODE)
        except FileExistsError:
            if not os.path.isdir(p):
                raise


def write_atomic(path, write):
    """Calls `write(binary_file)` on a temporary file next to `path` (open
    for reading too, so a zip can be appended to), then renames it to `path`
    (replacing an existing file)."""
    folder, name = os.path.split(path)
    # A leading dot and a .tmp suffix: never taken for a .npy/.json by a reader.
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")
    try:
        with os.fdopen(fd, "w+b") as f:
            write(f)
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def json_text(data):
    """msprobe's save_json(..., indent=4): json.dump defaults (ASCII, bare NaN/Infinity tokens)."""
    return json.dumps(data, indent=4)


def write_json(path, text):
    write_atomic(path, lambda f: f.write(text.encode("ascii")))


def write_npy(path, array):
    write_atomic(path, lambda f: np.save(f, array, allow_pickle=False))


# ---------------------------------------------------------------------------
# Zip packs (config_check): several processes (ranks) add entries to one zip.

def _lock_file(zip_path):
    folder, name = os.path.split(os.path.abspath(zip_path))
    return os.path.join(folder, f".{name}.lock")


class _ZipLock:
    """An exclusive fcntl lock on a hidden file next to the zip (the zip itself
    is replaced by a rename, so it cannot carry the lock). Without fcntl
    (Windows) only the threads of this process are serialised."""

    _thread_lock = threading.RLock()

    def __init__(self, zip_path):
        self.path = _lock_file(zip_path)
        self.fd = None

    def __enter__(self):
        self._thread_lock.acquire()
        try:
            import fcntl
        except ImportError:
            return self
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, FILE_MODE)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except BaseException:
            if self.fd is not None:
                os.close(self.fd)
                self.fd = None
            self._thread_lock.release()
            raise
        return self

    def __exit__(self, *exc):
        try:
            if self.fd is not None:
                os.close(self.fd)  # closing releases the flock
                self.fd = None
        finally:
            self._thread_lock.release()


def update_zip(zip_path, entries):
    """Adds `entries` ([(name, str or bytes)]) to the zip at `zip_path`, as
    msprobe's create_file_in_zip does (ZipInfo(name): ZIP_DEFLATED, no folder
    entries), but atomically and without duplicates: under the lock, the zip
    is rewritten to a temporary file (existing entries first, in their order,
    an entry with the same name replaced in place, new names appended) and
    renamed over the old one. A reader never sees a half-written zip. When
    every name is new (each forward's dataset and weights), the old zip's
    bytes are copied and the entries appended, without recompressing it."""
    import zipfile

    new = {}
    for name, content in entries:
        new[name] = content.encode("utf-8") if isinstance(content, str) else bytes(content)

    def info_for(name, old=None):
        zi = zipfile.ZipInfo(name)
        if old is not None:
            zi.date_time = old.date_time
            zi.external_attr = old.external_attr
            zi.create_system = old.create_system
        zi.compress_type = zipfile.ZIP_DEFLATED
        return zi

    with _ZipLock(zip_path):
        old_zip = None
        try:
            try:
                old_zip = zipfile.ZipFile(zip_path, "r")
            except FileNotFoundError:
                old_zip = None
            except zipfile.BadZipFile as e:
                raise RuntimeError(f"{zip_path} exists but is not a zip file ({e}); remove it or choose another output_zip_path") from None

            def append(f):
                with open(zip_path, "rb") as src:
                    shutil.copyfileobj(src, f)
                f.seek(0)
                with zipfile.ZipFile(f, "a") as out:
                    for name, data in new.items():
                        out.writestr(info_for(name), data)

            def write(f):
                written = set()
                with zipfile.ZipFile(f, "w") as out:
                    if old_zip is not None:
                        for zi in old_zip.infolist():
                            if zi.filename in written:
                                continue  # a duplicate left by msprobe's append: the later one was kept below
                            written.add(zi.filename)
                            if zi.filename in new:
                                out.writestr(info_for(zi.filename, zi), new[zi.filename])
                            else:
                                # The last entry of that name (what extraction gives).
                                out.writestr(info_for(zi.filename, zi), old_zip.read(old_zip.getinfo(zi.filename)))
                    for name, data in new.items():
                        if name not in written:
                            written.add(name)
                            out.writestr(info_for(name), data)

            old_names = old_zip.namelist() if old_zip is not None else []
            all_new = old_zip is not None and len(set(old_names)) == len(old_names) and not any(n in new for n in old_names)
            write_atomic(zip_path, append if all_new else write)
        finally:
            if old_zip is not None:
                old_zip.close()
