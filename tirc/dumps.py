"""Writing dumps: each file atomically (temporary name, then rename), and a
manifest rewritten after each file, so the dump directory is never
half-written, even when a later stage fails. With `--save-inputs`, the input
tensors go to `inputs/<sha256>.pt` before any dump that names them."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
from pathlib import Path

import torch

from ir_text import Input, Module, storage_span
from lowering import fallback_ops
from scheduler import extern_kernels, peak_memory


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _bytes(data: str | bytes) -> bytes:
    """Text is written as UTF-8 with its newlines as they are."""
    return data if isinstance(data, bytes) else data.encode()


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp creates the file 0600; give it the mode a plain open() would.
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(_bytes(data))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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

    def write(self, filename: str, data: str | bytes, stage: str, module: Module | None = None) -> None:
        write_atomic(self.dir / filename, data)
        entry = {"stage": stage, "file": filename, "sha256": hashlib.sha256(_bytes(data)).hexdigest()}
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

    def save_inputs(self, inputs: list[Input], saved: list[bytes]) -> None:
        """Write each input's file (`serialize_input`) and record its sha256 on the input."""
        for inp, data in zip(inputs, saved):
            inp.sha256 = hashlib.sha256(data).hexdigest()
            filename = f"inputs/{inp.sha256}.pt"
            if filename not in {e["file"] for e in self.entries}:
                self.write(filename, data, "input")


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
