"""Helpers for the CLI and API tests: example programs, and running `tirc`
either in this process (`tirc.cli.main`) or as a real subprocess."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tirc.cli import main

# A benchmark-convention program: a parameter, a broadcast, a where, two outputs.
MODEL_SOURCE = '''"""Example program for the tirc CLI tests."""

import torch


class Model(torch.nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.randn(features))

    def forward(self, x, y):
        a = torch.nn.functional.gelu(x + self.bias)
        b = torch.where(y > 0, a * 2.0, y)
        return a - b, torch.sigmoid(b)


def get_inputs():
    return [torch.randn(7, 37), torch.randn(37)]


def get_init_inputs():
    return [37]
'''

# A function named with --entry instead of class Model.
ENTRY_SOURCE = """import torch


def swish_bias(x, b):
    y = x + b
    return y * torch.sigmoid(y)


def get_inputs():
    return [torch.randn(5, 37), torch.randn(37)]
"""

STAGE_FILES = ("01-capture.tir", "02-lower.tir", "03-schedule.tir", "04-fusion.tir", "05-memplan.tir")


def tirc_command() -> list[str]:
    """The installed console script, or `python -m tirc` when there is none."""
    script = Path(sys.executable).with_name("tirc")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tirc"]


def cli_env(**extra) -> dict[str, str]:
    env = dict(os.environ)
    env["TRITON_INTERPRET"] = "1"
    env.pop("TIRC_TRACEBACK", None)
    env.update(extra)
    return env


def start_tirc(args, cwd, **env) -> subprocess.Popen:
    """Start `tirc ARGS` in `cwd` (not waiting for it)."""
    return subprocess.Popen(
        tirc_command() + [str(a) for a in args],
        cwd=cwd,
        env=cli_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_tirc(args, cwd, **env) -> subprocess.CompletedProcess:
    proc = start_tirc(args, cwd, **env)
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def compile_dumps(source: Path, dump_dir: Path, *extra) -> None:
    """`tirc compile SOURCE --dump-after=all --dump-dir DIR` in this process."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(
            ["compile", str(source), "--dump-after=all", "--dump-dir", str(dump_dir), *map(str, extra)]
        )
    assert code == 0, err.getvalue()


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    """`dumps(backend)`: a directory with every dump of MODEL_SOURCE (made once per module)."""
    made = {}

    def get(backend: str) -> Path:
        if backend not in made:
            root = tmp_path_factory.mktemp(f"dumps_{backend}")
            (root / "model.py").write_text(MODEL_SOURCE)
            compile_dumps(root / "model.py", root / "dumps", "--backend", backend)
            made[backend] = root / "dumps"
        return made[backend]

    return get


@pytest.fixture(scope="session")
def stage_files():
    return STAGE_FILES


@pytest.fixture(scope="session")
def sources():
    """The example programs' texts: {"model": ..., "entry": ...}."""
    return {"model": MODEL_SOURCE, "entry": ENTRY_SOURCE}


@pytest.fixture(scope="session")
def tirc_run():
    """`tirc_run(args, cwd, **env)`: a real `tirc` subprocess, waited for."""
    return run_tirc


@pytest.fixture(scope="session")
def tirc_start():
    """`tirc_start(args, cwd, **env)`: a real `tirc` subprocess, started (Popen)."""
    return start_tirc


@pytest.fixture
def cli(capsys):
    """`cli(*args)` runs `tirc ARGS` in this process: (exit code, stderr)."""

    def run(*args):
        capsys.readouterr()
        code = main([str(a) for a in args])
        return code, capsys.readouterr().err

    return run


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(MODEL_SOURCE)
    return path


@pytest.fixture
def entry_file(tmp_path):
    path = tmp_path / "entry.py"
    path.write_text(ENTRY_SOURCE)
    return path


@pytest.fixture
def dynamo():
    """A clean Dynamo cache around the test: its compiled frames and guards
    would otherwise carry over from one test's torch.compile to the next."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()
