"""bench/train.py: a training step of each workload on `--small` sizes, the
C++ backend, no Inductor (its compile alone would take most of this file's
time here): the table is written and every gradient matches eager."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).parents[1] / "bench"


def _load():
    sys.path.insert(0, str(BENCH))  # train.py imports common beside it
    spec = importlib.util.spec_from_file_location("bench_train", BENCH / "train.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


train = _load()


def test_small_run_writes_its_section_and_matches(tmp_path):
    results = tmp_path / "RESULTS.md"
    assert train.main(["--small", "--only", "mlp,resnet_basic_blocks", "--write", str(results)]) == 0
    text = results.read_text()
    assert "<!-- train-cpu -->" in text and "| resnet_basic_blocks" in text
    assert text.count("| ok ") == 2


def test_a_gradient_off_eager_fails_the_row():
    row = train.Row("x", {}, {}, {}, {"tirc": 3e-4})
    assert not train._matches(row)
    assert train._matches(train.Row("x", {}, {}, {}, {"tirc": 3e-4}, tf32=True))
