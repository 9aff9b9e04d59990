"""The user's source files a report embeds: those its `loc(...)` lines name.

A dump is untrusted (docs/security.md): the file names in its locations are
only looked up where they cannot reach outside what the user pointed at. A
name matches a path the caller gives (the `.py` file `tirc compile` was
given) by its name or as given; otherwise only a plain `.py` file name (no
directory part) is looked for in the search directories (the dump
directory, the current directory). Each file is capped in size, and all of
them together, so a report stays small enough to open."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MAX_FILE_BYTES = 1 << 20
MAX_TOTAL_BYTES = 8 << 20


@dataclass(frozen=True)
class SourceFile:
    name: str  # as the locations name it
    text: str | None  # None: not available, for `note`'s reason
    note: str


def _plain_name(name: str) -> bool:
    return (
        name.endswith(".py")
        and "/" not in name
        and "\\" not in name
        and not name.startswith(".")
        and name.isprintable()
    )


def _candidates(name: str, given: list[Path], search: list[Path]) -> list[Path]:
    found = [p for p in given if p.name == name or str(p) == name]
    if _plain_name(name):
        found += [directory / name for directory in search]
    return found


def _read(path: Path, budget: int) -> tuple[str | None, str]:
    try:
        if not path.is_file():
            return None, "source not available"
        size = path.stat().st_size
        if size > min(MAX_FILE_BYTES, budget):
            return None, f"source not available: {size} bytes, more than a report embeds"
        return path.read_text(encoding="utf-8"), ""
    except (OSError, UnicodeDecodeError):
        return None, "source not available: not a readable text file"


def user_sources(names: list[str], given: list[Path], search: list[Path]) -> list[SourceFile]:
    """One SourceFile per location file name, in the order of `names`."""
    out, budget = [], MAX_TOTAL_BYTES
    for name in names:
        text, note = None, "source not available"
        for path in _candidates(name, given, search):
            text, note = _read(path, budget)
            if text is not None:
                budget -= len(text.encode("utf-8"))
                break
        out.append(SourceFile(name, text, note))
    return out
