"""Which models the browser tests load reports of."""

from __future__ import annotations

import os
from pathlib import Path

MODELS = Path(__file__).parent / "models"


def model_files() -> dict[str, Path]:
    """The models the tests load reports of: tests/browser/models/*.py, or
    instead the benchmark-convention files TIRC_REPORT_MODELS names
    (comma-separated paths), to check the report on models it was not
    built with."""
    named = os.environ.get("TIRC_REPORT_MODELS")
    if named:
        return {Path(p).stem: Path(p).resolve() for p in named.split(",") if p}
    return {p.stem: p for p in sorted(MODELS.glob("*.py"))}
