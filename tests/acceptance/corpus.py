"""The benchmark-convention problem files the acceptance scripts select."""

from __future__ import annotations

from pathlib import Path


def find_problems(names: list[str], directory: Path) -> list[Path]:
    """The problem files that `names` select (every file under `directory` when
    empty): a path, a directory, or a file name looked up under `directory`.
    Sorted as given, without repeats."""
    if not names:
        return sorted(directory.rglob("*.py"))
    found: list[Path] = []
    for name in names:
        candidates = [Path(name), directory / name, directory / f"{name}.py"]
        path = next((p for p in candidates if p.exists()), None)
        if path is None:
            matches = sorted(directory.rglob(f"{name}.py"))
            if not matches:
                raise SystemExit(f"no problem named {name!r} (looked under {directory})")
            found.extend(matches)
        elif path.is_dir():
            found.extend(sorted(path.rglob("*.py")))
        else:
            found.append(path)
    return list(dict.fromkeys(p.resolve() for p in found))
