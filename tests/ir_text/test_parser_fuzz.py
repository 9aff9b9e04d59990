"""The parser fuzzer in CI: seeded mutants of every stage's dump of a few
programs (parser_mutants.py) through parse and verify, as `tirc verify` runs
them. None may end in a traceback, hang, or be rejected without a
`FILE:LINE:COL: error:` line. `make fuzz-parser` runs more."""

from __future__ import annotations

import random
import time

import parser_mutants
import pytest
from parser_mutants import corpus, fuzz, mutant, run_mutant

from ir_text import TircError

# 3 x 200 mutants: about 10 s on one core (15-20 ms a mutant).
SEEDS = (1, 2, 3)
COUNT = 200


@pytest.fixture(scope="module")
def texts():
    return corpus()


def test_the_corpus_has_every_stage(texts):
    stages = {name.split("/")[1] for name in texts}
    assert stages == {"capture", "lower", "schedule", "fusion", "memplan"}
    joined = "\n".join(texts.values())
    for construct in ("floordiv(", "mod(", "min(", "max(", "indirect(", "scan(", "extern ", "wrapper {"):
        assert construct in joined, construct


@pytest.mark.parametrize("seed", SEEDS)
def test_mutants_are_accepted_or_rejected_with_a_located_error(texts, seed):
    tally = fuzz(texts, COUNT, seed)
    assert not tally.failures, "\n".join(tally.failures)
    # The mutants reach past the grammar: some verify, most are rejected.
    assert tally.counts.get("rejected", 0) > COUNT // 2, tally.counts


def test_mutants_are_deterministic(texts):
    bodies = list(texts.values())
    first = [mutant(random.Random(7), bodies) for _ in range(3)]
    again = [mutant(random.Random(7), bodies) for _ in range(3)]
    assert first == again


# ---- the fuzzer tells each kind of failure apart


def _raising(error):
    def verify(text, filename="mutant.tir"):
        raise error

    return verify


@pytest.mark.parametrize(
    "verify, kind",
    [
        (_raising(RecursionError("maximum recursion depth exceeded")), "traceback"),
        (_raising(ValueError("Exceeds the limit (4300 digits)")), "traceback"),
        (_raising(TircError("no position")), "unlocated"),
        (_raising(TircError("located", line=3, col=4)), "rejected"),
        (lambda text, filename="": time.sleep(5), "hang"),
        (lambda text, filename="": None, "accepted"),
    ],
)
def test_run_mutant_tells_the_outcomes_apart(monkeypatch, verify, kind):
    monkeypatch.setattr(parser_mutants, "verify_text", verify)
    assert run_mutant("text", seconds=0.2).kind == kind
