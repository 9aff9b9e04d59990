"""Output comparison: elementwise tolerances, and the float64 reference that
tells summation-order noise in an ill-conditioned program from a miscompile."""

from __future__ import annotations

import torch

from tirc.compare import compare_outputs


def _noisy(reference: torch.Tensor, size: float, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return (reference + size * torch.randn(reference.shape, generator=gen, dtype=torch.float64)).float()


def test_elementwise_match_needs_no_reference():
    e = torch.randn(100)
    assert compare_outputs([e + 1e-7], [e]) is None


def test_noise_as_large_as_eagers_passes_with_a_float64_reference():
    reference = torch.randn(1000, dtype=torch.float64) * 500
    expected, actual = _noisy(reference, 1e-3, 1), _noisy(reference, 1e-3, 2)
    assert compare_outputs([actual], [expected]) is not None  # beyond rtol 1e-4 elementwise
    assert compare_outputs([actual], [expected], lambda: [reference]) is None


def test_one_wrong_element_fails_even_with_a_float64_reference():
    reference = torch.randn(1000, dtype=torch.float64) * 500
    expected, actual = _noisy(reference, 1e-3, 1), _noisy(reference, 1e-3, 2)
    actual[123] += 1.0
    mismatch = compare_outputs([actual], [expected], lambda: [reference])
    assert mismatch is not None and "float64" in mismatch.message and "[123]" in mismatch.message


def test_nan_in_another_place_fails():
    reference = torch.randn(50, dtype=torch.float64)
    expected = reference.float()
    actual = expected.clone()
    actual[7] = float("nan")
    assert compare_outputs([actual], [expected], lambda: [reference]) is not None


def test_replay_of_an_ill_conditioned_dump_matches(tmp_path, cli):
    """Seeded random weights make a deep-ish model ill-conditioned: replay
    still matches, through the float64 reference."""
    (tmp_path / "deep.py").write_text(
        "import torch\n\n\n"
        "def f(x, w1, w2, w3):\n"
        "    h = torch.layer_norm((x @ w1).relu() @ w2, (64,))\n"
        "    return torch.softmax(h @ w3 * 4, -1)\n\n\n"
        "def get_inputs():\n"
        "    return [torch.randn(16, 64), torch.randn(64, 64), torch.randn(64, 64), torch.randn(64, 64)]\n"
    )
    code, err = cli(
        "compile", tmp_path / "deep.py", "--entry", "f", "--dump-after=lower", "--dump-dir", tmp_path / "d"
    )
    assert code == 0, err
    code, err = cli("replay", tmp_path / "d" / "02-lower.tir")
    assert code == 0, err


def test_a_mismatch_stands_when_the_float64_run_is_not_possible():
    """A reference that cannot run (None: a dump whose externs take no
    float64) is no second look: the float32 mismatch is reported."""
    runs = []

    def unavailable():
        runs.append(1)
        return None

    mismatch = compare_outputs([torch.zeros(3), torch.zeros(2)], [torch.ones(3), torch.ones(2)], unavailable)
    assert mismatch is not None and "no float64 run to compare with" in mismatch.message, mismatch
    assert compare_outputs([torch.ones(3)], [torch.ones(3)], unavailable) is None
    assert len(runs) == 1  # asked for once, and only for a mismatch
