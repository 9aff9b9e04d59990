"""`tirc report DIR`: one self-contained HTML page of a compile's dumps.

The stages side by side, every op, node, kernel and line of generated code
linked to its user source line and back; the fusion plan as a graph of
kernels and refused pairs; the memory plan as a timeline of buffer
lifetimes with its peak; timings, fallback ops, autotuning choices, the
manifest (and a profile, when the manifest has one). A training compile's
forward and backward graphs are one report with a graph selector.
Deterministic: the same dumps give the same bytes."""

from __future__ import annotations

import os
from pathlib import Path

from ..dumps import write_atomic
from .collect import collect
from .graph_data import graph_data
from .page import render_page
from .user_sources import user_sources

__all__ = ["build_report", "write_report"]


def build_report(directory: str | os.PathLike, sources=None) -> str:
    """The page for the dumps under `directory`. `sources` are paths of the
    user's files the compile knows (the `.py` it was given); other files
    that locations name are looked for, by plain name only, in the dump
    directory and the current directory."""
    directory = Path(directory)
    dumps = collect(directory)
    graphs, texts = [], []
    for files in dumps.graphs:
        data, file_texts = graph_data(files)
        graphs.append(data)
        texts.append(file_texts)
    names = sorted({loc[0] for g in graphs for loc in g["locs"]})
    given = [Path(p) for p in sources or ()]
    found = user_sources(names, given, [directory, Path.cwd()])
    data = {
        "title": dumps.source,
        "graphs": graphs,
        "training": dumps.training,
        "sources": [{"name": s.name, "available": s.text is not None, "note": s.note} for s in found],
    }
    return render_page(dumps.source or directory.name, data, texts, [s.text for s in found])


def write_report(directory: str | os.PathLike, sources=None, output: str | os.PathLike | None = None) -> Path:
    """Write the report of the dumps under `directory` to `output` (default
    `directory/report.html`), atomically; returns its path. Raises
    TircError for a missing directory, no dumps, or a malformed dump."""
    page = build_report(directory, sources)
    path = Path(output) if output is not None else Path(directory) / "report.html"
    write_atomic(path, page)
    return path
