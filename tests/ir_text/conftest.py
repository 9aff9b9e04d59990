"""Fixtures of the IR-text tests; plain helpers live in tir_helpers.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))

from tir_helpers import chain4, stage_texts, two_sizes  # noqa: E402

from tirc.options import Options  # noqa: E402


@pytest.fixture(scope="session")
def dumps():
    """Every stage's dump of a few small programs, computed once."""
    torch.manual_seed(0)
    x = torch.randn(4, 5)
    return {
        "chain": stage_texts(chain4, [x]),
        "chain_unfused": stage_texts(chain4, [x], Options(fusion=False)),
        "two_sizes": stage_texts(two_sizes, [x, torch.randn(5)]),
    }


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Compiled kernels go to a private cache, not the user's."""
    old = os.environ.get("TIRC_CACHE_DIR")
    os.environ["TIRC_CACHE_DIR"] = str(Path(tmp_path_factory.mktemp("tirc-cache")))
    yield
    if old is None:
        os.environ.pop("TIRC_CACHE_DIR", None)
    else:
        os.environ["TIRC_CACHE_DIR"] = old
