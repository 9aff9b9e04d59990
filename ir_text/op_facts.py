"""What reading and printing IR text needs to know of a listed ATen op from
torch, kept where `tirc fmt` and `tirc diff` can read it without torch.

The parser checks every op a text names (op_policy: its refusal), and the
printer writes an extern call's schema above it. Both come from torch's op
registry, and importing torch takes seconds, most of what a `tirc fmt` of a
few dumps would cost. So the first process that answers them with torch
loaded writes the facts of every op on the allow-list, for its torch
version and that list, to one table under the cache directory; a process
without torch reads the table instead, and imports torch only for an op
the table lacks (one off the list, whose refusal names it).

The table is untrusted, like every cache entry (docs/security.md): it is
JSON, and an entry that is not one line of printable text (or None) makes
the whole table ignored. The worst a forged table can do is a wrong comment
above an extern call, or `tirc fmt` accepting an impure op that every
command which runs anything still refuses: those import torch and check
with it, never with the table.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .op_policy import PURE_OPS_FILE, pure_ops


@dataclass(frozen=True)
class OpFacts:
    schema: str | None  # the ATen schema, None when this torch lacks the op
    refusal: str | None  # why IR text may not name it (op_policy), None when it may


def cache_root() -> Path:
    """tirc's cache directory: TIRC_CACHE_DIR, else ~/.cache/tirc."""
    root = os.environ.get("TIRC_CACHE_DIR") or os.path.join(Path.home(), ".cache", "tirc")
    return Path(root)


def known_op(target: str) -> OpFacts | None:
    """The table's facts of `target` in a process without torch, else None
    (torch answers). A process with torch writes the table once, when it is
    missing."""
    if "torch" in sys.modules:
        _write_table_once()
        return None
    return _read_table().get(target)


@functools.lru_cache(maxsize=1)
def _table_path() -> Path | None:
    """The table for the torch that `import torch` would load, named by the
    hash of its version file (found without importing torch) and of the
    allow-list; None when there is no such file."""
    spec = importlib.util.find_spec("torch")
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    try:
        version = (Path(locations[0]) / "version.py").read_bytes() if locations else None
    except OSError:
        version = None
    if version is None:
        return None
    key = hashlib.sha256(version + PURE_OPS_FILE.read_bytes()).hexdigest()[:24]
    return cache_root() / "op-facts" / f"{key}.json"


@functools.lru_cache(maxsize=1)
def _read_table() -> dict[str, OpFacts]:
    path = _table_path()
    try:
        data = json.loads(path.read_text()) if path is not None else {}
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    if not isinstance(data, dict) or not all(_valid(name, entry) for name, entry in data.items()):
        return {}
    return {name: OpFacts(*entry) for name, entry in data.items()}


def _valid(name, entry) -> bool:
    one_line = lambda s: s is None or (isinstance(s, str) and s.isprintable())  # noqa: E731
    return isinstance(entry, list) and len(entry) == 2 and all(map(one_line, entry)) and isinstance(name, str)


@functools.lru_cache(maxsize=1)
def _write_table_once() -> None:
    path = _table_path()
    if path is None or path.exists():
        return
    from .op_policy import live_refusal
    from .printer import live_schema

    table = {name: [live_schema(name), live_refusal(name)] for name in sorted(pure_ops())}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(table, f, indent=0, sort_keys=True)
        os.replace(tmp, path)
    except OSError:  # a read-only cache: later processes ask torch, as this one did
        pass
