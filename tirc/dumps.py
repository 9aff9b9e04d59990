"""Writing dumps: each file atomically (temporary name, then rename), and a
manifest rewritten after each file, so the dump directory is never
half-written, even when a later stage fails."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from ir_text import Module


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` so that readers see the old file or the new one, never half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp creates the file 0600; give it the mode a plain open() would.
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, "w", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def counts(module: Module) -> dict[str, int]:
    externs = [n for n in module.nodes if n.kind == "extern"]
    return {
        "buffers": len(module.nodes),
        "kernels": len(module.kernels or ()),
        "extern_calls": len(externs),
        "ops": (
            len(module.graph)
            if module.stage == "capture"
            else sum(len(getattr(n, "body", ())) for n in module.nodes) + len(externs)
        ),
    }


class DumpWriter:
    """Writes the requested stages' dumps and output_code.py, and the manifest."""

    def __init__(self, directory: str | os.PathLike, stages: set[str], source: str, options):
        self.dir = Path(directory)
        self.stages = stages
        self.entries: list[dict] = []
        self.source = source
        self.options = options

    def wants(self, stage: str) -> bool:
        return stage in self.stages

    def write(self, filename: str, text: str, stage: str, module: Module | None = None) -> None:
        write_atomic(self.dir / filename, text)
        entry = {"stage": stage, "file": filename, "sha256": hashlib.sha256(text.encode()).hexdigest()}
        if module is not None:
            entry.update(counts(module))
        self.entries.append(entry)
        self._manifest()

    def _manifest(self) -> None:
        manifest = {
            "source": self.source,
            "options": dict(self.options.to_pairs()),
            "files": self.entries,
        }
        write_atomic(self.dir / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")
