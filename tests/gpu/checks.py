"""What the GPU check scripts share: comparing a result with eager PyTorch.
Not a `gpu_*.py` script itself, so run_all.py does not run it."""

import torch

TOL = {torch.float32: (1e-4, 1e-5), torch.bfloat16: (2e-2, 2e-2), torch.float16: (2e-3, 2e-3)}


def close_to_eager(got, eager, exact, slack: float = 2e-6, equal_nan: bool = False) -> None:
    """Within the dtype's tolerance of eager (exact for integers and
    booleans), or, for a long float32 sum where summation order dominates,
    no farther from float64 (`exact`) than twice eager is, plus `slack` of
    its largest magnitude.

    A program that casts to float32 itself (x.float()) makes the "float64"
    run a float32 one, exact for eager's order: the default slack allows a
    float32 rounding of the largest magnitude then."""
    rtol, atol = TOL.get(eager.dtype, (0, 0))
    try:
        torch.testing.assert_close(got, eager, rtol=rtol, atol=atol, equal_nan=equal_nan)
    except AssertionError:
        if eager.dtype != torch.float32:
            raise
        ours = (got.double() - exact).abs().max().item()
        theirs = (eager.double() - exact).abs().max().item()
        if ours > 2 * theirs + slack * exact.abs().max().item() + 1e-6:
            raise AssertionError(f"max error vs float64 {ours:.3g}, eager's {theirs:.3g}") from None
