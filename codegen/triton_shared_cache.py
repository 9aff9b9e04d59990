"""Triton's compiled kernels through tirc's remote cache: a machine that
shares the remote cache with one that compiled a kernel loads its binary
instead of compiling it again.

Triton keeps each compiled kernel in its own cache directory, as a group
of files (the GPU binary, its metadata, the IRs) under a key it hashes from
the kernel's source, options and target GPU architecture, and the host
modules it builds with a C compiler (launchers) as single `.so` files.
`SharedCache` is Triton's file cache manager with a second level: a group
or host module missing locally is fetched from the remote cache (signed,
remote_cache.py) and written into the local directory, and one written
locally is published. `install`
makes it Triton's cache manager when a remote cache is configured and
nobody chose another manager (TRITON_CACHE_MANAGER).

The remote key adds what Triton's key leaves to the machine: Triton's
version, the host platform and Python (the group may hold a launcher built
for them), and the GPU's compute capability, so no machine loads a binary
for another platform. A fetched group is checked before any file is
written: plain file names only (no path may leave the kernel's directory),
the metadata group naming exactly the files fetched.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import sys
import sysconfig

from .remote_cache import remote

KIND = "triton"
_GROUP_PREFIX = "__grp__"
# The file name ending of a host module Triton builds (a kernel launcher).
_HOST_MODULE = sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def install() -> None:
    """Make SharedCache Triton's cache manager, where a remote cache is
    configured, this Triton has the knob, and no other manager is set."""
    if remote() is None:
        return
    try:
        from triton import knobs
    except ImportError:
        return
    cache = getattr(knobs, "cache", None)
    if cache is None or not hasattr(cache, "manager_class"):
        return
    if cache.manager_class is None:
        cache.manager_class = _manager_class()


@functools.lru_cache(maxsize=1)
def _platform() -> str:
    import torch
    import triton

    capability = torch.cuda.get_device_capability() if torch.cuda.is_available() else "none"
    return f"triton {triton.__version__} {sysconfig.get_platform()} python {sys.version_info[:2]} sm {capability}"


def _manager_class():
    from triton.runtime.cache import FileCacheManager

    class SharedCache(FileCacheManager):
        """Triton's file cache with tirc's remote cache as a second level."""

        def __init__(self, key, override=False, dump=False):
            super().__init__(key, override, dump)
            # Dump and override directories are local debugging aids.
            self._remote = None if (override or dump) else remote()

        def _remote_key(self, filename: str) -> str:
            text = f"{_platform()}\0{self.key}\0{filename}"
            return hashlib.sha256(text.encode()).hexdigest()[:32]

        def _fetch(self, filename: str, most: int | None = None) -> dict[str, bytes] | None:
            """The files published under `filename` (at most `most`), or
            None; a bad entry is dropped remotely."""
            key = self._remote_key(filename)
            value = self._remote.get(KIND, key)
            if value is None:
                return None
            files, problem = _decode(value, filename)
            if problem is None and most is not None and len(files) > most:
                problem = f"more than {most} file(s)"
            if problem is not None:
                self._remote.drop(KIND, key, problem)
                return None
            return files

        def get_group(self, filename: str):
            group = super().get_group(filename)
            if group is not None or self._remote is None:
                return group
            files = self._fetch(filename)
            if files is None:
                return None
            paths = {
                name: super(SharedCache, self).put(data, name, binary=True) for name, data in files.items()
            }
            super().put_group(filename, paths)
            return super().get_group(filename)

        def get_file(self, filename: str):
            path = super().get_file(filename)
            if path is not None or self._remote is None or not filename.endswith(_HOST_MODULE):
                return path
            files = self._fetch(filename, most=1)
            return None if files is None else super().put(files[filename], filename, binary=True)

        def put(self, data, filename: str, binary=True):
            path = super().put(data, filename, binary)
            if self._remote is not None and filename.endswith(_HOST_MODULE) and isinstance(data, bytes):
                self._remote.put(KIND, self._remote_key(filename), _encode({filename: data}))
            return path

        def put_group(self, filename: str, group):
            path = super().put_group(filename, group)
            if self._remote is not None:
                try:
                    files = {name: _read(p) for name, p in group.items()}
                except OSError:
                    return path
                self._remote.put(KIND, self._remote_key(filename), _encode(files))
            return path

    return SharedCache


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _encode(files: dict[str, bytes]) -> bytes:
    body = {name: base64.b64encode(data).decode() for name, data in sorted(files.items())}
    return json.dumps({"format": 1, "files": body}, sort_keys=True).encode()


def _decode(value: bytes, filename: str) -> tuple[dict[str, bytes], str | None]:
    """(files by name, None), or ({}, what is wrong with the value)."""
    try:
        entry = json.loads(value.decode())
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}, "not JSON"
    if not isinstance(entry, dict) or entry.get("format") != 1 or not isinstance(entry.get("files"), dict):
        return {}, "not a Triton kernel group"
    files = {}
    for name, data in entry["files"].items():
        if not _plain_name(name) or not isinstance(data, str):
            return {}, f"a file name or content that is not plain: {name[:60]!r}"
        try:
            files[name] = base64.b64decode(data, validate=True)
        except ValueError:
            return {}, f"file {name!r} is not base64"
    if filename not in files:
        return {}, f"the group lacks its metadata file {filename!r}"
    return files, None


def _plain_name(name) -> bool:
    return (
        isinstance(name, str)
        and 0 < len(name) <= 255
        and "/" not in name
        and "\\" not in name
        and "\0" not in name
        and name not in (".", "..")
        and not name.startswith(_GROUP_PREFIX)
    )
