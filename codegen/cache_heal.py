"""What the on-disk caches (C++ objects, timed choices, tirc's compiled
code) share: their directory (`cache_dir`), and how they treat it as
untrusted input: a bad entry is dropped with one warning line and built
again; one that cannot be is a TircError that blames the cache and says
what to delete; temporary files a killed process left behind are swept."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from ir_text import TircError, printable

# A temporary file or work directory untouched for this long was left by a
# killed build or writer: a live g++ run or cache write takes seconds, so
# nothing a concurrent process still uses is this old.
STALE_TEMP_SECONDS = 3600


def sha256_hex(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def warn_dropped(path: Path, reason: str) -> None:
    """The one line a healed entry costs, as tirc's other messages on stderr
    (escaped: the reason may quote the entry's bytes)."""
    print(
        printable(f"tirc: warning: dropped a corrupt cache entry {path} ({reason}); rebuilding"),
        file=sys.stderr,
    )


def drop_entry(reason: str, *paths: Path) -> None:
    """Remove a bad entry's files (the first is the one named) and warn;
    a cache tirc cannot write to is a TircError that blames it."""
    try:
        for path in paths:
            path.unlink(missing_ok=True)
    except OSError as err:
        raise cache_error(
            paths[0], f"a corrupt entry ({reason}) that cannot be removed ({err.strerror})"
        ) from None
    warn_dropped(paths[0], reason)


def cache_error(path: Path, problem: str) -> TircError:
    """An error the cache, not the user's program, is to blame for."""
    return TircError(
        f"compile cache: {problem}; delete {path}, or set TIRC_CACHE_DIR to another directory "
        "(TIRC_NO_CODE_CACHE=1 also skips the compiled-code cache)",
        file=str(path),
    )


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write `path` through a temporary file renamed into place, so a reader
    sees the whole text (or bytes) or none."""
    mode = "wb" if isinstance(data, bytes) else "w"
    with tempfile.NamedTemporaryFile(mode, dir=path.parent, suffix=".tmp", delete=False) as tmp:
        tmp.write(data)
    try:
        os.replace(tmp.name, path)
    except OSError:
        os.unlink(tmp.name)
        raise


def read_json(path: Path):
    """The JSON value in `path`; a ValueError names what is wrong with it."""
    return decode_json(path.read_bytes())


def decode_json(raw: bytes):
    """The JSON value in `raw`; a ValueError names what is wrong with it."""
    try:
        return json.loads(raw.decode())  # UTF-8 as written, not JSON's guess
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"not JSON: {err.msg} at line {err.lineno}") from None


def shape_problem(record, fields: dict[str, type], version: int) -> str | None:
    """What is wrong with the layout of a decoded record: it must be an
    object with each field of its type (exactly: a bool is no int) and
    "format" equal to `version`; None when nothing is."""
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, not an object"
    for name, kind in fields.items():
        if type(record.get(name)) is not kind:
            return f"field '{name}' missing or not of type {kind.__name__}"
    if record["format"] != version:
        return f"format {record['format']}, not {version}"
    return None


def sweep_stale_temps(directory: Path) -> None:
    """Remove the `*.tmp` files and work directories in `directory` that were
    left by a killed process: those older than STALE_TEMP_SECONDS."""
    cutoff = time.time() - STALE_TEMP_SECONDS
    try:
        entries = list(directory.glob("*.tmp"))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.lstat().st_mtime >= cutoff:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        except OSError:
            pass  # swept by another process meanwhile, or not removable: it costs disk, not a compile


def cache_dir() -> Path:
    root = os.environ.get("TIRC_CACHE_DIR") or os.path.join(Path.home(), ".cache", "tirc")
    return Path(root)
