"""Which compiled programs replay as a CUDA graph (tirc/cuda_graphs.py),
decided from their generated code. Replay itself needs a GPU:
tests/gpu/gpu_graphs.py checks it there, call by call against eager."""

from __future__ import annotations

import pytest
import torch

import tirc
from tirc.cuda_graphs import blocker
from tirc.options import Options


def _code(fn, inputs, backend="triton"):
    return tirc.compile(fn, inputs, backend=backend, device="cpu").code


PROGRAMS = {
    "in-place update of an input": (lambda x: x.mul_(2), "writes into or returns"),
    "an input returned": (lambda x: (x, x.sin()), "writes into or returns"),
    "random numbers": (lambda x: x + torch.rand_like(x), "random"),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_a_graph_would_change_are_not_replayed(name):
    fn, words = PROGRAMS[name]
    reason = blocker(_code(fn, [torch.randn(37, 5)]))
    assert reason is not None and words in reason


def test_a_gather_that_checks_its_indices_is_not_replayed():
    table, index = torch.randn(50, 8), torch.randint(0, 50, (37,))
    code = _code(lambda t, i: t[i] * 2, [table, index])
    assert "runtime.check_values(" in code
    assert "host" in blocker(code)


@pytest.mark.parametrize("backend", ["triton", "cpp"])
def test_plain_programs_may_be_replayed(backend):
    x, w = torch.randn(37, 129), torch.randn(129, 16)
    assert blocker(_code(lambda x, w: torch.relu(x @ w).softmax(-1), [x, w], backend)) is None


def test_cpu_programs_and_the_option_off_get_no_graph():
    x = torch.randn(37)
    assert tirc.compile(torch.sin, [x], backend="triton", device="cpu").graphs is None
    assert Options(cuda_graphs=False).to_pairs() != Options().to_pairs()
    assert ("cuda_graphs", True) not in Options().to_pairs()  # the default is not printed in dumps
