"""The cache of choices made by timing (Triton launch configs, matmul
libraries): a compile times a choice once, then reads the record back, on
this machine and, with a remote cache, on every machine that shares it
(cache_store.Levels). A record is untrusted input: one that is not JSON, or
whose winner its caller's `valid` rejects (an index out of range, a library
it does not know), is timed again and overwritten."""

from __future__ import annotations

import hashlib
import json
from typing import Callable

from filelock import FileLock

from . import cache_store
from .cache_heal import decode_json


def timed_record(kind: str, parts: list[str], measure, valid: Callable[[dict], bool]) -> dict:
    """The record of a choice made by timing, keyed by `parts`: read back
    when a valid one exists, else `measure()` makes it and it is written to
    both levels under a filelock, so concurrent compiles on one machine time
    it once."""
    key = _key(parts)
    store = cache_store.levels()
    path = store.local.path(kind, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        record = _read(store, kind, key, valid)
        if record is None:
            record = measure()
            store.put(kind, key, json.dumps(record, indent=1, sort_keys=True).encode())
    return record


def recorded_choice(kind: str, parts: list[str], valid: Callable[[dict], bool]) -> dict | None:
    """The valid record keyed by `parts`, if there is one (no lock: a
    record being written reads as missing)."""
    return _read(cache_store.levels(), kind, _key(parts), valid)


def _key(parts: list[str]) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def _read(store: cache_store.Levels, kind: str, key: str, valid) -> dict | None:
    try:
        raw = store.get(kind, key)
        record = None if raw is None else decode_json(raw)
    except (OSError, ValueError):
        return None  # not timed yet, or a damaged record: time again and overwrite
    return record if isinstance(record, dict) and valid(record) else None
