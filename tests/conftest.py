"""Shared test setup: Triton runs through its CPU interpreter in CI."""

import os
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")
# No timing at compile time unless a test asks for it (with a timer of its own):
# dumps and goldens must not depend on this machine's speed.
os.environ.setdefault("TIRC_AUTOTUNE", "0")

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

# Property tests draw the same examples on every run (seeded by the test's
# name): a failure reproduces, and one run of `make test` cannot fail on an
# unlucky draw (an ill-conditioned random program, x / (x - tanh(x)) at
# x = 0.046, amplified a 1-ulp tanh difference past the tolerance in one CI
# run). `make fuzz` draws new programs.
settings.register_profile("tirc", derandomize=True)
settings.load_profile("tirc")

# Golden files: the `golden` fixture and `pytest --update-goldens` (docs/goldens.md);
# pytester runs small pytest sessions in the golden tooling's own tests;
# `redis_server`, a real Redis server for the remote-cache tests.
pytest_plugins = ["pytester", "repro.golden_plugin", "tests.redis_server"]


@pytest.fixture(scope="module")
def private_cache(tmp_path_factory):
    """TIRC_CACHE_DIR set to a fresh directory for a module's tests (as it
    was afterwards): kernels they plan build there (tirc's prebuild), not in
    the user's cache."""
    old = os.environ.get("TIRC_CACHE_DIR")
    os.environ["TIRC_CACHE_DIR"] = str(Path(tmp_path_factory.mktemp("tirc-cache")))
    yield
    if old is None:
        os.environ.pop("TIRC_CACHE_DIR", None)
    else:
        os.environ["TIRC_CACHE_DIR"] = old
