"""Comparing results with a reference: per-dtype tolerances, and a report that
names the worst element, its index and the tolerance."""

from __future__ import annotations

from dataclasses import dataclass

import torch

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


def compare_outputs(actual, expected) -> Mismatch | None:
    """None when every output matches; otherwise the first mismatch, described."""
    if len(actual) != len(expected):
        return Mismatch(-1, f"{len(actual)} outputs, expected {len(expected)}")
    for k, (a, e) in enumerate(zip(actual, expected)):
        problem = _compare(a, e)
        if problem:
            return Mismatch(k, f"output {k}: {problem}")
    return None


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
