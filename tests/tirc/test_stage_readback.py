"""The pipeline goes on with each stage's result in memory, and reads back
only the memplan stage's text (tirc/pipeline.py, reads_back). That is
exact only if every in-memory module compiles as its printed text does:
here, for a corpus of fusion patterns and models on both backends, a
compile that parses and verifies every stage's text (verify_roundtrip)
writes the same dumps and the same output_code.py, byte for byte, as the
default compile.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tirc
from tirc.sources import load_python

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = ROOT / "tests" / "acceptance" / "problems"
CORPUS = sorted((PROBLEMS / "patterns").glob("*.py")) + sorted((PROBLEMS / "models").glob("*.py"))
OPTION_LINE = ", verify_roundtrip = true"

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def compiled_files(path: Path, backend: str, out: Path, roundtrip: bool) -> dict[str, str]:
    program = load_python(str(path))
    options = {"verify_roundtrip": True} if roundtrip else None
    tirc.compile(program.fn, program.inputs, backend=backend, dump_after="all", dump_dir=out, options=options)
    return {
        f.name: f.read_text().replace(OPTION_LINE, "") for f in out.iterdir() if f.suffix in (".tir", ".py")
    }


@pytest.mark.parametrize("backend", ("cpp", "triton"))
@pytest.mark.parametrize("path", CORPUS, ids=[f"{p.parent.name}/{p.stem}" for p in CORPUS])
def test_in_memory_stages_compile_as_their_texts(path, backend, tmp_path, monkeypatch):
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")
    default = compiled_files(path, backend, tmp_path / "default", False)
    verified = compiled_files(path, backend, tmp_path / "verified", True)
    assert sorted(default) == sorted(verified) and "output_code.py" in default
    for name in default:
        assert default[name] == verified[name], f"{name} differs when every stage is read back"


def test_the_option_reads_every_stage_back(monkeypatch):
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")
    program = load_python(str(CORPUS[0]))
    plain = tirc.compile(program.fn, program.inputs, backend="cpp")
    checked = tirc.compile(program.fn, program.inputs, backend="cpp", options={"verify_roundtrip": True})
    parsed = [name for name in plain.timings if name.endswith(".parse")]
    assert parsed == ["memplan.parse"]
    assert [n for n in checked.timings if n.endswith(".parse")] == [
        f"{stage}.parse" for stage in ("capture", "lower", "schedule", "fusion", "memplan")
    ]
