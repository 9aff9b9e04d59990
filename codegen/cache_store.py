"""Where tirc's caches keep their entries: byte values by kind and key,
through one interface, `Store` (get, put, delete), with two backends:

- `DiskStore`, files under TIRC_CACHE_DIR (`KIND/XX/KEY.json`), written
  through a temporary file renamed into place: the first level, always
  there;
- remote_cache.RedisStore, signed values in a Redis server that machines
  share: the second level, when TIRC_REMOTE_CACHE names one.

`Levels` puts them together: a read tries the local store, then the remote
one, and copies a remote hit into the local store; a write goes to both;
`drop` removes a bad entry from both, with one warning. Neither level is
trusted: the cache that reads an entry checks it (cache_heal.shape_problem,
hashes) and drops it when it is bad. C++ objects keep their own files
(cpp_build.py: an object and its record) and use the remote store alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from .cache_heal import cache_dir, drop_entry, sweep_stale_temps, write_atomic
from .remote_cache import RedisStore, remote


class Store(Protocol):
    def get(self, kind: str, key: str) -> bytes | None:
        """The value stored under (kind, key), or None."""

    def put(self, kind: str, key: str, value: bytes) -> None:
        """Store `value`, whole or not at all."""

    def delete(self, kind: str, key: str) -> None:
        """Remove the value, if any."""


class DiskStore:
    """Files `root/KIND/XX/KEY.json`. `get` raises OSError for a file that is
    there but cannot be read; `put` raises OSError for a directory it cannot
    write (callers decide whether that costs speed or a compile)."""

    def __init__(self, root: Path):
        self.root = root

    def path(self, kind: str, key: str) -> Path:
        return self.root / kind / key[:2] / f"{key}.json"

    def get(self, kind: str, key: str) -> bytes | None:
        try:
            return self.path(kind, key).read_bytes()
        except FileNotFoundError:
            return None

    def put(self, kind: str, key: str, value: bytes) -> None:
        path = self.path(kind, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        sweep_stale_temps(path.parent)
        write_atomic(path, value)

    def delete(self, kind: str, key: str) -> None:
        self.path(kind, key).unlink(missing_ok=True)


class Levels:
    """The local store in front of the remote one (None: local only)."""

    def __init__(self, local: DiskStore, remote: RedisStore | None):
        self.local, self.remote = local, remote

    def get(self, kind: str, key: str) -> bytes | None:
        """The local value, else the remote one (then also kept locally), else None.
        A local file that cannot be read raises OSError."""
        value = self.local.get(kind, key)
        if value is not None or self.remote is None:
            return value
        value = self.remote.get(kind, key)
        if value is not None:
            try:
                self.local.put(kind, key, value)
            except OSError:
                pass  # a read-only local cache still gets the remote's entry this time
        return value

    def put(self, kind: str, key: str, value: bytes) -> None:
        """Write both levels; a local directory that cannot be written raises
        OSError after the remote write."""
        if self.remote is not None:
            self.remote.put(kind, key, value)
        self.local.put(kind, key, value)

    def drop(self, kind: str, key: str, reason: str) -> None:
        """Remove a bad entry from both levels, with one warning naming the
        local file (a TircError when it cannot be removed)."""
        if self.remote is not None:
            self.remote.delete(kind, key)
        drop_entry(reason, self.local.path(kind, key))


def levels() -> Levels:
    """The caches' store as the environment configures it now."""
    return Levels(DiskStore(cache_dir()), remote())
