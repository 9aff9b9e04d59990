"""Comparing results with a reference: per-dtype tolerances, and a report that
names the worst element, its index and the tolerance."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ir_text import TircError

# (rtol, atol) per dtype: loose enough for libm differences between backends.
TOLERANCES = {
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float32: (1e-4, 1e-5),
    torch.float64: (1e-7, 1e-7),
}


@dataclass(frozen=True)
class Mismatch:
    output: int
    message: str


def compare_outputs(actual, expected, reference=None) -> Mismatch | None:
    """None when every output matches; otherwise the first mismatch, described.

    `reference`, when given, is a callable returning float64 results of the
    same program. A float32 output outside the elementwise tolerance
    still matches when it is about as close to the float64 result as the
    expected one is, as Inductor's accuracy checks use an fp64 reference: an
    ill-conditioned program (a deep model on seeded random weights) differs
    from eager in summation order alone, and that is not a miscompile.

    The reference is asked for only when an output is outside the tolerance.
    One that cannot be computed raises TircError: the verdict is then
    undecided, raised as that error (exit 2) with the difference it was
    needed for, never reported as a mismatch.
    """
    if len(actual) != len(expected):
        return Mismatch(-1, f"{len(actual)} outputs, expected {len(expected)}")
    wide = _NOT_RUN
    for k, (a, e) in enumerate(zip(actual, expected)):
        problem = _compare(a, e)
        if problem and reference is not None and e.dtype == torch.float32:
            wide = _ask(reference, f"output {k}: {problem}") if wide is _NOT_RUN else wide
            # A reference that returns None has no float64 form of the
            # program to offer (tirc replay's raises instead): the mismatch stands.
            verdict = _against_float64(a, e, wide[k]) if wide else "no float64 run to compare with"
            if verdict is None:
                continue
            problem += f"; {verdict}" if verdict else ""
        if problem:
            return Mismatch(k, f"output {k}: {problem}")
    return None


_NOT_RUN = object()  # the float64 reference, before it is asked for


def _ask(reference, problem: str):
    """The float64 results; when they cannot be computed, the error says
    which difference was left undecided."""
    try:
        return reference()
    except TircError as err:
        message = f"{err.message}; it was needed to judge {problem}: undecided, not a mismatch"
        raise TircError(message, err.file, err.line, err.col) from None


# How much further from the float64 result than the expected output an actual
# output may be (root mean square errors), plus a floor relative to its scale.
FP64_ERROR_MULTIPLIER = 2.0
FP64_ERROR_FLOOR = 1e-7


def _against_float64(a: torch.Tensor, e: torch.Tensor, r: torch.Tensor | None) -> str | None:
    """None when `a` is as close to the float64 result `r` as `e` is; else why not."""
    if r is None or tuple(r.shape) != tuple(a.shape):
        return ""
    a, e, r = a.detach().cpu().double(), e.detach().cpu().double(), r.detach().cpu().double()
    if not torch.equal(torch.isnan(a), torch.isnan(e)):
        return "NaNs in other places than expected"
    finite = torch.isfinite(r) & torch.isfinite(e)
    if not torch.equal(a[~finite].nan_to_num(), e[~finite].nan_to_num()):
        return "infinities differ"
    if not finite.any():
        return None
    error_a = (a[finite] - r[finite]).pow(2).mean().sqrt().item()
    error_e = (e[finite] - r[finite]).pow(2).mean().sqrt().item()
    scale = r[finite].abs().max().item()
    if error_a <= FP64_ERROR_MULTIPLIER * error_e + FP64_ERROR_FLOOR * max(scale, 1.0):
        return None
    return f"against a float64 run: rms error {error_a:.3g}, the expected output's {error_e:.3g}"


def _compare(a: torch.Tensor, e: torch.Tensor) -> str | None:
    if tuple(a.shape) != tuple(e.shape):
        return f"shape {list(a.shape)}, expected {list(e.shape)}"
    if a.dtype != e.dtype:
        return f"dtype {a.dtype}, expected {e.dtype}"
    if a.numel() == 0:
        return None
    a, e = a.detach().cpu(), e.detach().cpu()
    rtol, atol = TOLERANCES.get(e.dtype, (0.0, 0.0))
    if not (e.dtype.is_floating_point):
        bad = a != e
        if not bad.any():
            return None
        idx = tuple(int(i) for i in bad.nonzero()[0])
        return f"{int(bad.sum())} element(s) differ; first at {list(idx)}: {a[idx].item()} vs {e[idx].item()} (exact match required)"
    a64, e64 = a.double(), e.double()
    nan_ok = torch.isnan(a64) & torch.isnan(e64)
    same_inf = a64 == e64
    err = (a64 - e64).abs()
    # Infinite expectations must be met exactly (rtol * inf would allow anything).
    allowed = torch.where(torch.isinf(e64), torch.zeros_like(e64), atol + rtol * e64.abs())
    bad = ~(nan_ok | same_inf | (err <= allowed))
    if not bad.any():
        return None
    excess = torch.where(bad, err.nan_to_num(float("inf")) - allowed, torch.full_like(err, -1.0))
    flat = int(excess.flatten().argmax())
    idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), a.shape)) if a.dim() else ()
    return (
        f"{int(bad.sum())} of {a.numel()} element(s) differ; worst at {list(idx)}: "
        f"got {a64[idx].item():.9g}, expected {e64[idx].item():.9g} "
        f"(|diff| {err[idx].item():.3g} > atol {atol:g} + rtol {rtol:g} * |expected|)"
    )
