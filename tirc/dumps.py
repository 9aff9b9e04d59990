"""Writing dumps: each file atomically (temporary name, then rename), and a
manifest rewritten after each file, so the dump directory is never
half-written, even when a later stage fails. With `--save-inputs`, the input
tensors go to `inputs/<sha256>.pt` before any dump that names them.

The manifest's "timings" (the compile's, timings.py) and "profile" (a
`--profile` run's, profiling.py) are the parts of the directory that differ
from run to run: determinism checks compare it without them
(`comparable_files`)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import sys
from pathlib import Path

import torch

from ir_text import Input, Module, TircError, storage_span
from lowering import fallback_ops
from scheduler import extern_kernels, peak_memory

from .files import text_bytes, write_atomic
from .timings import Timings


def counts(module: Module) -> dict:
    externs = [n for n in module.nodes if n.kind == "extern"]
    extern_names = extern_kernels(module) if module.kernels else frozenset()
    out = {
        "buffers": len(module.nodes),
        # Loop kernels only; extern kernels are counted by extern_calls.
        "kernels": sum(k.name.name not in extern_names for k in module.kernels or ()),
        "extern_calls": len(externs),
        # ATen ops run as extern calls for want of a lowering (not matmul/conv).
        "fallback_ops": list(fallback_ops(module)),
        "ops": (
            len(module.graph)
            if module.stage == "capture"
            else sum(len(getattr(n, "body", ())) for n in module.nodes) + len(externs)
        ),
    }
    if module.wrapper is not None:
        out["peak_bytes"] = peak_memory(module)
    return out


# The files a compile writes into its dump directory, which an earlier
# compile's may not outlive: a stale 05-memplan.tir beside a new 01-capture.tir
# would replay another program without a word.
_STAGE_FILE = re.compile(r"\d\d-[a-z]+(\.[a-z-]+)?\.tir")
_OWN_FILES = ("manifest.json", "output_code.py", "report.html")


class DumpWriter:
    """Writes the requested stages' dumps and output_code.py, and the manifest.

    Before its first file, it removes what an earlier compile left in the
    directory (stage dumps, output_code.py, the manifest), except `keep`:
    the dump being compiled, when it lies there. Saved inputs stay: they are
    named by their sha256, so a stale one is never read for another. With
    `timings`, the manifest records them as they stand at each write, and
    `finish()` records them once the compile is done."""

    def __init__(
        self,
        directory: str | os.PathLike,
        stages: set[str],
        source: str,
        options,
        keep: str | None = None,
        timings: Timings | None = None,
    ):
        self.dir = Path(directory)
        if self.dir.exists() and not self.dir.is_dir():
            raise TircError(f"the dump directory '{self.dir}' exists and is not a directory")
        self.stages = stages
        self.entries: list[dict] = []
        self.source = source
        self.options = options
        self._keep = Path(keep).resolve() if keep else None
        self._cleared = False
        self._timings = timings
        self._profile: dict | None = None

    def wants(self, stage: str) -> bool:
        return stage in self.stages

    @property
    def written(self) -> bool:
        return bool(self.entries)

    def _clear_stale(self) -> None:
        self._cleared = True
        if not self.dir.is_dir():
            return
        stale = [
            path
            for path in sorted(self.dir.iterdir())
            if (path.name in _OWN_FILES or _STAGE_FILE.fullmatch(path.name))
            and path.is_file()
            and path.resolve() != self._keep
        ]
        for path in stale:
            path.unlink()
        if stale:
            print(
                f"tirc: removed {len(stale)} file(s) of an earlier compile from {self.dir}", file=sys.stderr
            )

    def write(self, filename: str, data: str | bytes, stage: str, module: Module | None = None) -> None:
        if not self._cleared:
            self._clear_stale()
        write_atomic(self.dir / filename, data)
        entry = {"stage": stage, "file": filename, "sha256": hashlib.sha256(text_bytes(data)).hexdigest()}
        if module is not None:
            entry.update(counts(module))
        self.entries.append(entry)
        self._manifest()

    def finish(self) -> None:
        """Rewrite the manifest with the whole compile's timings (nothing
        when no file was written: the directory stays as it was)."""
        if self.written and self._timings is not None:
            self._manifest()

    def add_profile(self, profile: dict) -> None:
        """Record a `--profile` run (profiling.py) as the manifest's "profile"."""
        self._profile = profile
        if self.written:
            self._manifest()

    def _manifest(self) -> None:
        manifest = {
            "source": self.source,
            "options": dict(self.options.to_pairs()),
            "files": self.entries,
        }
        if self._timings is not None:
            # A list, not an object: the keys are sorted, and the stages' order is the point.
            manifest["timings"] = [
                {"name": name, "seconds": round(seconds, 6)}
                for name, seconds in self._timings.as_dict().items()
            ]
        if self._profile is not None:
            manifest["profile"] = self._profile
        write_atomic(self.dir / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")

    def save_inputs(self, inputs: list[Input], saved: list[bytes]) -> None:
        """Write each input's file (`serialize_input`) and record its sha256 on the input."""
        for inp, data in zip(inputs, saved):
            inp.sha256 = hashlib.sha256(data).hexdigest()
            filename = f"inputs/{inp.sha256}.pt"
            if filename not in {e["file"] for e in self.entries}:
                self.write(filename, data, "input")


def manifest_without_timings(data: bytes) -> bytes:
    """A manifest.json's bytes less its "timings" and "profile", which differ
    between runs: what a determinism check compares."""
    manifest = json.loads(data)
    manifest.pop("timings", None)
    manifest.pop("profile", None)
    return (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()


def comparable_files(directory: Path) -> dict[str, bytes]:
    """Each file under a dump directory (its path relative to it -> its
    bytes) as two runs' directories are compared: manifest.json without
    its timings and profile, the things that differ between runs (and so
    is every manifest.json below it)."""
    files = {
        path.relative_to(directory).as_posix(): path.read_bytes()
        for path in sorted(Path(directory).rglob("*"))
        if path.is_file()
    }
    for name in files:
        # A training compile's graphs have a manifest each (forward/, backward/).
        if name == "manifest.json" or name.endswith("/manifest.json"):
            files[name] = manifest_without_timings(files[name])
    return files


def serialize_input(tensor: torch.Tensor) -> bytes:
    """The bytes of `inputs/<sha256>.pt`: torch.save of the tensor, on the CPU,
    with its shape and strides over a storage of exactly the elements those
    strides reach (as codegen's random_input builds an input), so the bytes,
    and the sha256, depend only on the values and the layout."""
    t = tensor.detach()
    flat = t.as_strided((storage_span(t.shape, t.stride()),), (1,)).cpu().clone()
    buffer = io.BytesIO()
    torch.save(flat.as_strided(t.shape, t.stride()), buffer)
    return buffer.getvalue()
