"""Algorithm selection for CPU matmuls (codegen/cpp_extern_select.py): a
linear-shaped float32 addmm or mm runs as oneDNN's linear when that times
faster, recorded in the lower dump, correct against eager, cached on disk, and
never re-timed from a dump.

Most tests choose with made-up timings (`_one_run` replaced) so that the
choice is known; one times for real and checks only what holds whoever wins.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import weakref
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import tirc
from codegen import cpp_extern_select as extern_select
from ir_text import parse
from lowering import interpret
from matching import assert_matches

ROOT = Path(__file__).resolve().parents[2]
ONEDNN = "mkldnn._linear_pointwise.default"

pytestmark = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="this torch has no oneDNN")


class MLP(torch.nn.Module):
    def __init__(self, d=129, hidden=1000, out=37, bias=True):
        super().__init__()
        self.up = torch.nn.Linear(d, hidden, bias=bias)
        self.down = torch.nn.Linear(hidden, out, bias=bias)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class Clock:
    """Made-up timings: `fast` names the candidate that takes 1 ms, the
    other takes `other_s`; counts runs timed."""

    def __init__(self, fast: str, other_s: float = 0.002):
        self.fast, self.other_s, self.timed = fast, other_s, 0

    def __call__(self, run):
        run()
        self.timed += 1
        return 0.001 if run.__name__ == self.fast else self.other_s


@pytest.fixture
def selecting(tmp_path, monkeypatch):
    """Selection switched on, with its own cache; returns a function that
    installs a made-up clock favouring one candidate."""
    monkeypatch.delenv("TIRC_AUTOTUNE", raising=False)
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")

    def favour(fast: str, other_s: float = 0.002) -> Clock:
        clock = Clock(fast, other_s)
        monkeypatch.setattr(extern_select, "_one_run", clock)
        return clock

    return favour


def externs(text: str) -> list[str]:
    return [line.split(" = extern ")[1].split("(")[0] for line in text.splitlines() if " = extern " in line]


def compile_mlp(model, tmp_path, shape=(37, 129)):
    torch.manual_seed(0)
    program = tirc.compile(model, [torch.randn(*shape)], dump_after="lower,memplan", dump_dir=tmp_path / "d")
    return program, (tmp_path / "d" / "02-lower.tir").read_text()


@pytest.mark.parametrize("bias", [True, False], ids=["addmm", "mm"])
def test_onednn_replaces_the_linear_when_faster(selecting, tmp_path, bias):
    clock = selecting("onednn")
    model = MLP(bias=bias).eval()
    program, lower = compile_mlp(model, tmp_path)
    assert clock.timed == 2 * 2 * extern_select.ROUNDS_MIN  # two matmuls, two candidates a round
    assert externs(lower) == [ONEDNN, ONEDNN]  # the transposing views are gone too
    assert ("%up.bias" in lower) == bias
    torch.manual_seed(1)
    fresh = torch.randn(37, 129)
    with torch.no_grad():
        want = model(fresh)
    # A 1000-term float32 dot product summed in another order.
    torch.testing.assert_close(program(fresh), want, rtol=1e-4, atol=1e-4)
    # The reference interpreter runs the rewritten dump too.
    module = parse(lower, "02-lower.tir")
    (got,) = interpret(module, [t.detach() for _, t in program.lifted] + [fresh])
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_aten_stays_when_onednn_is_not_faster(selecting, tmp_path):
    clock = selecting("aten")
    _, lower = compile_mlp(MLP().eval(), tmp_path)
    assert clock.timed == 2 * 2 * extern_select.ROUNDS_BEHIND  # oneDNN behind: stops early
    # The up projection's bias is added in the GELU's loop (lowering/bias.py).
    assert externs(lower) == ["aten.as_strided.default", "aten.mm.default"] + [
        "aten.as_strided.default",
        "aten.addmm.default",
    ]


def test_only_linear_shaped_float32_matmuls_are_candidates(selecting, tmp_path):
    clock = selecting("onednn")

    def not_linear(a, b, w):
        # a @ b: b is not a transposed weight; bf16 is left to ATen. A second
        # operand computed by a loop node (b + 1, an eye) is not a view either.
        return a @ b, F.linear(w, w), a @ (b + 1), (b.t() @ a.t()) @ torch.eye(37)

    torch.manual_seed(0)
    args = [torch.randn(37, 129), torch.randn(129, 64), torch.randn(16, 16).bfloat16()]
    program = tirc.compile(not_linear, args, dump_after="lower", dump_dir=tmp_path / "d")
    assert clock.timed == 0
    assert ONEDNN not in (tmp_path / "d" / "02-lower.tir").read_text()
    assert_matches(program(*args), not_linear(*args))


def test_winners_are_cached_and_a_refed_dump_is_not_timed(selecting, tmp_path):
    clock = selecting("onednn")
    model = MLP().eval()
    program, lower = compile_mlp(model, tmp_path)
    records = sorted((tmp_path / "cache" / "extern-select").glob("*/*.json"))
    assert len(records) == 2
    assert all(json.loads(r.read_text())["winner"] == ONEDNN for r in records)
    timed = clock.timed
    torch.manual_seed(0)
    again = tirc.compile(model, [torch.randn(37, 129)])
    assert clock.timed == timed and again.code == program.code
    # The dump, compiled in another process with timing on, is not timed:
    # that process has no made-up clock, and its code is the same bytes.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tirc",
            "compile",
            str(tmp_path / "d" / "02-lower.tir"),
            "--dump-dir",
            str(tmp_path / "e"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "TIRC_CACHE_DIR": str(tmp_path / "other-cache")},
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "other-cache" / "extern-select").exists()
    assert (tmp_path / "e" / "output_code.py").read_text().split('"""', 2)[2] == program.code.split('"""', 2)[
        2
    ]


def test_a_damaged_record_is_timed_again(selecting, tmp_path):
    clock = selecting("onednn")
    compile_mlp(MLP().eval(), tmp_path)
    for record in (tmp_path / "cache" / "extern-select").glob("*/*.json"):
        record.write_text("{not json")
    timed = clock.timed
    compile_mlp(MLP().eval(), tmp_path)
    assert clock.timed == timed + 2 * 2 * extern_select.ROUNDS_MIN


def test_real_timing_gives_eager_results(tmp_path, monkeypatch):
    # Whichever library wins on this machine, results match eager and a
    # second compile generates the same bytes from the cached choice.
    monkeypatch.delenv("TIRC_AUTOTUNE", raising=False)
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")
    model = MLP().eval()
    program, _ = compile_mlp(model, tmp_path)
    assert len(list((tmp_path / "cache" / "extern-select").glob("*/*.json"))) == 2
    fresh = torch.randn(37, 129)
    with torch.no_grad():
        torch.testing.assert_close(program(fresh), model(fresh), rtol=1e-4, atol=1e-4)
    torch.manual_seed(0)
    assert tirc.compile(model, [torch.randn(37, 129)]).code == program.code


@pytest.mark.parametrize(
    "onednn_s, rounds",
    [
        (0.00105, extern_select.ROUNDS_BEHIND),
        (0.001, extern_select.ROUNDS_BEHIND),
        (0.00097, extern_select.ROUNDS_BEHIND),
        (0.00094, extern_select.ROUNDS_MAX),
    ],
    ids=["behind", "level", "slightly-ahead", "ahead"],
)
def test_timing_stops_once_onednn_cannot_catch_up(selecting, tmp_path, monkeypatch, onednn_s, rounds):
    """Close timings: ATen's 1 ms against oneDNN's. Not ahead by half of
    MARGIN after ROUNDS_BEHIND rounds, oneDNN is timed no more; further
    ahead, both run ROUNDS_MAX rounds (and ATen stays, the lead being
    under MARGIN)."""
    clock = selecting("aten", onednn_s)
    monkeypatch.setattr(extern_select, "TIME_BUDGET_S", 1.0)
    _, lower = compile_mlp(MLP().eval(), tmp_path)
    assert clock.timed == 2 * 2 * rounds  # two matmuls, two candidates a round
    assert ONEDNN not in lower


def test_one_slow_first_run_does_not_decide(selecting, tmp_path, monkeypatch):
    """ATen's first run is slow (a thread waking up), later ones 1 ms;
    oneDNN's take 1.05 ms throughout. Once, that made oneDNN clearly faster
    after a single round; now the medians of ROUNDS_MIN rounds keep ATen."""
    clock = selecting("aten", 0.00105)
    seen = weakref.WeakSet()  # each matmul's ATen candidate (an id could be reused)

    def slow_first(run):
        seconds = clock(run)
        if run.__name__ == "aten" and run not in seen:
            seen.add(run)
            return 0.005
        return seconds

    monkeypatch.setattr(extern_select, "_one_run", slow_first)
    _, lower = compile_mlp(MLP().eval(), tmp_path)
    # Ahead on the slow first run's medians until ROUNDS_MIN rounds, then behind.
    assert clock.timed == 2 * 2 * extern_select.ROUNDS_MIN
    assert ONEDNN not in lower
