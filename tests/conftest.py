"""Shared test setup: Triton runs through its CPU interpreter in CI."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")
# No timing at compile time unless a test asks for it (with a timer of its own):
# dumps and goldens must not depend on this machine's speed.
os.environ.setdefault("TIRC_AUTOTUNE", "0")

# Golden files: the `golden` fixture and `pytest --update-goldens` (docs/goldens.md);
# pytester runs small pytest sessions in the golden tooling's own tests.
pytest_plugins = ["pytester", "repro.golden_plugin"]
