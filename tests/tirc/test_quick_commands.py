"""`tirc fmt`, `tirc diff` and `tirc --help` run without importing torch (its
import takes seconds): the parser and printer need none, and the facts of
ATen ops that they do need come from a table that a process with torch
wrote (ir_text/op_facts.py). A forged table is ignored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import tirc

ROOT = Path(__file__).resolve().parents[2]

# Runs the CLI in a fresh process and says whether torch was imported.
PROBE = """
import sys
from tirc.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
print("torch imported:", "torch" in sys.modules, "exit:", code)
"""


def _probe(cache: Path, *args) -> tuple[bool, int, str]:
    env = {**os.environ, "TIRC_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *map(str, args)], capture_output=True, text=True, env=env, cwd=ROOT
    )
    line = done.stdout.strip().splitlines()[-1]
    return "torch imported: True" in line, int(line.rpartition(" ")[2]), done.stderr


@pytest.fixture(scope="module")
def dumps(tmp_path_factory) -> list[Path]:
    """Every stage of a program with an extern call (a convolution, whose
    schema the printer writes above it) and graph ops."""
    directory = tmp_path_factory.mktemp("dumps")

    def program(x, w):
        return F.relu(F.conv2d(x, w, padding=1)).sum(dim=1)

    tirc.compile(
        program, [torch.randn(2, 3, 9, 9), torch.randn(4, 3, 3, 3)], dump_after="all", dump_dir=directory
    )
    return sorted(directory.glob("*.tir"))


def test_fmt_and_diff_need_no_torch_once_the_table_is_written(dumps, tmp_path):
    cache = tmp_path / "cache"
    # The first process has no table: it asks torch, and writes the table.
    imported, code, err = _probe(cache, "fmt", "--check", *dumps)
    assert (imported, code) == (True, 0), err
    assert len(list((cache / "op-facts").glob("*.json"))) == 1
    imported, code, err = _probe(cache, "fmt", "--check", *dumps)
    assert (imported, code) == (False, 0), err
    imported, code, err = _probe(cache, "diff", dumps[-2], dumps[-1])
    assert not imported and code == 1, err
    imported, code, _ = _probe(cache, "--help")
    assert (imported, code) == (False, 0)


def test_fmt_without_torch_writes_what_it_writes_with_torch(dumps, tmp_path):
    """A non-canonical dump (blank lines, comments dropped) is rewritten to
    the same bytes by a process that reads the table as by one with torch."""
    cache = tmp_path / "cache"
    _probe(cache, "fmt", "--check", *dumps)  # writes the table
    memplan = dumps[-1].read_text()
    assert "// aten::convolution(" in memplan
    messy = "\n".join(line for line in memplan.splitlines() if not line.startswith("//")) + "\n\n"
    copy = tmp_path / "messy.tir"
    copy.write_text(messy)
    imported, code, err = _probe(cache, "fmt", copy)
    assert (imported, code) == (False, 0), err
    assert copy.read_text() == memplan


def test_a_forged_table_is_ignored(dumps, tmp_path):
    """An entry that is not one printable line (a schema with a newline would
    write an IR line of the forger's into the dump) makes the whole table
    ignored: torch answers, and the output is torch's."""
    cache = tmp_path / "cache"
    _probe(cache, "fmt", "--check", *dumps)
    table = next((cache / "op-facts").glob("*.json"))
    entries = json.loads(table.read_text())
    entries["aten.convolution.default"] = ["x\n%evil = loop.pointwise", None]
    table.write_text(json.dumps(entries))
    imported, code, err = _probe(cache, "fmt", "--check", dumps[-1])
    assert (imported, code) == (True, 0), err
    table.write_text("[not a table")
    imported, code, err = _probe(cache, "fmt", "--check", dumps[-1])
    assert (imported, code) == (True, 0), err


def test_the_table_holds_what_torch_says(dumps, tmp_path):
    from ir_text import op_policy, printer, pure_ops

    cache = tmp_path / "cache"
    _probe(cache, "fmt", "--check", *dumps)
    table = json.loads(next((cache / "op-facts").glob("*.json")).read_text())
    assert set(table) == set(pure_ops())
    for name in sorted(table):
        assert table[name] == [printer.live_schema(name), op_policy.live_refusal(name)], name


def test_fmt_of_many_files_reports_each_in_order_and_the_worst_status(dumps, tmp_path):
    """Six files (which fmt splits between two processes): one malformed,
    one not canonical, the rest canonical. Each is reported in the order
    given, the malformed one's error does not stop the others, the
    non-canonical one is rewritten, and the status is the worst (2)."""
    files = []
    for k, dump in enumerate(dumps[:4]):
        files.append(tmp_path / f"{k}.tir")
        files[-1].write_text(dump.read_text())
    bad = tmp_path / "bad.tir"
    bad.write_text("tirc 0.1 stage=capture\n%x = \n")
    messy = tmp_path / "messy.tir"
    messy.write_text(dumps[-1].read_text() + "\n\n")
    order = [files[0], bad, files[1], messy, files[2], files[3]]
    cache = tmp_path / "cache"
    _probe(cache, "fmt", "--check", *dumps)  # the table: no torch in the next processes
    imported, code, err = _probe(cache, "fmt", *order)
    assert not imported and code == 2, err
    lines = err.splitlines()
    assert lines[0].startswith(f"{bad}:2:") and "error" in lines[0], lines
    assert lines[1:] == [f"reformatted {messy}"], lines
    assert messy.read_text() == dumps[-1].read_text()
    imported, code, err = _probe(cache, "fmt", "--check", *order)
    assert code == 2 and len(err.splitlines()) == 1, err


FORK_PROBE = """
import os, sys
from types import SimpleNamespace
from tirc import fmt_command
fmt_command._format = lambda path, check: (0, f"{path} {os.getpid()}")
fmt_command.fmt_command(SimpleNamespace(files=sys.argv[1:], check=True))
"""


def _split(files: list) -> list[str]:
    """The pid that formatted each of `files`, checking they are reported in order."""
    done = subprocess.run(
        [sys.executable, "-c", FORK_PROBE, *map(str, files)], capture_output=True, text=True, cwd=ROOT
    )
    lines = done.stderr.splitlines()
    assert [line.split()[0] for line in lines] == list(map(str, files)), done.stderr
    return [line.split()[1] for line in lines]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="fmt forks only on a machine of two cores or more")
def test_fmt_splits_many_files_between_two_processes_by_bytes(tmp_path):
    """Files of one directory are split by size: the large one alone, the
    three small ones in the other process."""
    files = [tmp_path / name for name in "abcd"]
    for path, size in zip(files, [10, 3000, 10, 10]):
        path.write_text("x" * size)
    pids = _split(files)
    assert pids[1] not in (pids[0], pids[2], pids[3]) and pids[0] == pids[2] == pids[3], pids


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="fmt forks only on a machine of two cores or more")
def test_fmt_keeps_each_directory_in_one_process(tmp_path):
    """The dumps of one compile share their index expressions, which each
    process builds once: a directory's files stay together."""
    files = []
    for directory, size in [("one", 100), ("two", 90), ("three", 20)]:
        (tmp_path / directory).mkdir()
        for name in "ab":
            files.append(tmp_path / directory / f"{name}.tir")
            files[-1].write_text("x" * size)
    pids = _split(files)
    assert pids[0] == pids[1] and pids[2] == pids[3] == pids[4] == pids[5] and pids[0] != pids[2], pids
