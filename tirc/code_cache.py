"""The compiled-code cache: a capture-stage module already compiled once
is not lowered, scheduled, fused, planned and generated again.

Keyed by the sha256 of tirc's own source files, of the versions of
Python, torch and Triton, and of the capture module's text (which holds
the options) with what tuning depends on (the caller's), so editing tirc
or the program, or moving to another torch, misses. An entry holds
output_code.py and the memplan dump; it is written to a temporary file and
renamed into place, so a concurrent reader sees a whole entry or none. It
lives beside the C++ cache under TIRC_CACHE_DIR and, when one is
configured, in the remote cache that machines share (codegen's
cache_store: the local level first); set TIRC_NO_CODE_CACHE=1 to always
run the pipeline. Compiles that write dumps or stop early run the pipeline
(the dumps are their point).

An entry is untrusted input: it must be an object of the expected fields
and format, its code and memplan text must match their sha256, and the code
must be Python (compiled as a syntax check, never run here). A bad entry is
dropped with one warning and compiled again. The memplan text is parsed only
when asked for (a parse costs as much as the rest of a warm compile), so a
text that does not parse is found then: `Compiled` drops and rebuilds it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from importlib import metadata
from pathlib import Path

import torch

from codegen import cache_heal, cache_store

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


@functools.lru_cache(maxsize=1)
def _versions() -> str:
    """What else the generated code depends on: Python's, torch's and
    Triton's versions, and whether Triton runs interpreted."""
    try:
        triton = metadata.version("triton")
    except metadata.PackageNotFoundError:
        triton = "none"
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"
    return (
        f"python {sys.version_info[:2]} torch {torch.__version__} triton {triton} interpreted {interpreted}"
    )


KIND = "code"


def _key(capture_text: str) -> str:
    parts = (_fingerprint(), _versions(), capture_text)
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


# The layout of an entry; tirc's fingerprint in the key already keeps other
# versions' entries apart, so this is checked, not keyed.
ENTRY_FORMAT = 1
_FIELDS = {"format": int, "code": str, "memplan": str, "code_sha256": str, "memplan_sha256": str}


def lookup(capture_text: str) -> tuple[str, str] | None:
    """(output_code.py, memplan text) compiled from this capture text
    before, here or on a machine sharing the remote cache, or None; a bad
    entry is dropped (one warning line) first."""
    store, key = cache_store.levels(), _key(capture_text)
    path = store.local.path(KIND, key)
    try:
        raw = store.get(KIND, key)
    except OSError as err:  # the local file: the remote entry may be sound
        cache_heal.drop_entry(f"unreadable: {err.strerror or err}", path)
        return None
    if raw is None:
        return None
    try:
        entry = cache_heal.decode_json(raw)
    except ValueError as err:
        store.drop(KIND, key, f"unreadable: {err}")
        return None
    problem = entry_problem(entry, str(path))
    if problem is not None:
        store.drop(KIND, key, problem)
        return None
    return entry["code"], entry["memplan"]


def entry_problem(entry, filename: str) -> str | None:
    """What is wrong with a decoded entry, or None."""
    problem = cache_heal.shape_problem(entry, _FIELDS, ENTRY_FORMAT)
    if problem is not None:
        return problem
    for field in ("code", "memplan"):
        if cache_heal.sha256_hex(entry[field]) != entry[f"{field}_sha256"]:
            return f"its {field} does not match its sha256"
    try:
        compile(entry["code"], filename, "exec")
    except (SyntaxError, ValueError) as err:  # ValueError: a null byte, before Python 3.12
        return f"its code is not Python: {getattr(err, 'msg', err)}"
    return None


def drop(capture_text: str, reason: str) -> None:
    """Remove the entry of `capture_text` (bad: `reason`), with one warning."""
    cache_store.levels().drop(KIND, _key(capture_text), reason)


def store(capture_text: str, code: str, memplan: str) -> None:
    entry = {
        "format": ENTRY_FORMAT,
        "code": code,
        "memplan": memplan,
        "code_sha256": cache_heal.sha256_hex(code),
        "memplan_sha256": cache_heal.sha256_hex(memplan),
    }
    try:
        cache_store.levels().put(KIND, _key(capture_text), json.dumps(entry).encode())
    except OSError:
        pass  # a read-only or full cache costs speed, never a compile
