"""What generated Triton code consults at run time: whether kernels run
through Triton's CPU interpreter (whose bf16 cast truncates, so the kernels
spell out round-to-nearest-even there)."""

from __future__ import annotations

import os


def interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"
