"""What a report is made of: the dump directory's graphs (one, or a training
compile's forward and backward, which its top manifest names), each graph's
stage dumps, output_code.py and manifest.json, read with one clear error
for anything missing or malformed."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ir_text import TircError

# NN-STAGE.tir and NN-STAGE.STEP.tir, as tirc.dumps writes them.
_DUMP_NAME = re.compile(r"\d\d-[a-z]+(\.[a-z-]+)?\.tir")
# A training manifest's graph names a directory below it: a plain name only.
_GRAPH_NAME = re.compile(r"[A-Za-z0-9_-]+")
MAX_DUMP_BYTES = 256 << 20


@dataclass
class GraphFiles:
    """One compiled graph's files: `name` is "" for a plain compile, else
    the training graph's ("forward", "backward")."""

    name: str
    directory: Path
    dumps: list[Path]
    output_code: Path | None
    manifest: dict | None


@dataclass
class DumpSet:
    directory: Path
    graphs: list[GraphFiles]
    training: dict | None = None  # the top manifest of a training compile
    source: str = ""
    search_dirs: list[Path] = field(default_factory=list)


def read_text(path: Path, limit: int = MAX_DUMP_BYTES) -> str:
    """A dump's text, or a TircError naming the file."""
    try:
        if not path.is_file():
            raise TircError("not a regular file" if path.exists() else "no such file", str(path))
        if path.stat().st_size > limit:
            raise TircError(f"larger than {limit} bytes, more than a report reads", str(path))
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TircError("not a text file (not UTF-8)", str(path)) from None
    except OSError as err:
        raise TircError(err.strerror or str(err), str(path)) from None


def read_manifest(path: Path) -> dict | None:
    if not path.exists():
        return None
    try:
        manifest = json.loads(read_text(path))
    except json.JSONDecodeError as err:
        raise TircError(f"malformed manifest: {err.msg}", str(path), err.lineno, err.colno) from None
    if not isinstance(manifest, dict):
        raise TircError("malformed manifest: not a JSON object", str(path))
    return manifest


def _graph(name: str, directory: Path) -> GraphFiles:
    dumps = sorted(p for p in directory.iterdir() if _DUMP_NAME.fullmatch(p.name) and p.is_file())
    code = directory / "output_code.py"
    return GraphFiles(
        name, directory, dumps, code if code.is_file() else None, read_manifest(directory / "manifest.json")
    )


def _training_graphs(directory: Path, training) -> list[str]:
    names = training.get("graphs") if isinstance(training, dict) else None
    if not isinstance(names, list):
        raise TircError("malformed manifest: training.graphs is not a list", str(directory / "manifest.json"))
    return [n for n in names if isinstance(n, str) and _GRAPH_NAME.fullmatch(n) and (directory / n).is_dir()]


def collect(directory: Path) -> DumpSet:
    """The dumps under `directory`; TircError when there are none."""
    if not directory.exists():
        raise TircError("no such directory", str(directory))
    if not directory.is_dir():
        raise TircError("not a directory (give the dump directory of a compile)", str(directory))
    top = read_manifest(directory / "manifest.json")
    training = top.get("training") if top is not None and "training" in top else None
    if training is not None:
        graphs = [_graph(name, directory / name) for name in _training_graphs(directory, training)]
        training = top
    else:
        graphs = [_graph("", directory)]
    graphs = [g for g in graphs if g.dumps]
    if not graphs:
        raise TircError(
            "no dumps here (NN-STAGE.tir files: write them with tirc compile --dump-after=all)",
            str(directory),
        )
    source = top.get("source") if top is not None else None
    if not isinstance(source, str):
        manifest = graphs[0].manifest or {}
        source = manifest.get("source") if isinstance(manifest.get("source"), str) else ""
    return DumpSet(directory, graphs, training, source)
