"""The compiled-code cache: a capture-stage module already compiled once
is not lowered, scheduled, fused, planned and generated again.

Keyed by the sha256 of tirc's own source files and of the capture module's
text (which holds the options), so editing tirc or the program misses. An
entry holds output_code.py and the memplan dump; it is written to a
temporary file and renamed into place, so a concurrent reader sees a whole
entry or none. Lives beside the C++ cache under TIRC_CACHE_DIR; set
TIRC_NO_CODE_CACHE=1 to always run the pipeline. Compiles that write dumps
or stop early run the pipeline (the dumps are their point).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path

from codegen import cache_dir

_PACKAGES = ("ir_text", "lowering", "scheduler", "codegen", "tirc")


@functools.lru_cache(maxsize=1)
def _fingerprint() -> str:
    """A hash of tirc's source files (code and grammar), read once per process."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for package in _PACKAGES:
        for path in sorted((root / package).rglob("*")):
            if path.suffix in (".py", ".lark") and "__pycache__" not in path.parts:
                digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def enabled() -> bool:
    return os.environ.get("TIRC_NO_CODE_CACHE", "") in ("", "0")


def _path(capture_text: str) -> Path:
    key = hashlib.sha256((_fingerprint() + "\0" + capture_text).encode()).hexdigest()[:32]
    return cache_dir() / "code" / key[:2] / f"{key}.json"


def lookup(capture_text: str) -> tuple[str, str] | None:
    """(output_code.py, memplan text) compiled from this capture text before, or None."""
    try:
        entry = json.loads(_path(capture_text).read_text())
        return entry["code"], entry["memplan"]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent, or unreadable: compile again and overwrite


def store(capture_text: str, code: str, memplan: str) -> None:
    path = _path(capture_text)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as tmp:
            json.dump({"code": code, "memplan": memplan}, tmp)
        os.replace(tmp.name, path)
    except OSError:
        pass  # a read-only or full cache costs speed, never a compile
