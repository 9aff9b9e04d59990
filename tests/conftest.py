"""Shared test setup: Triton runs through its CPU interpreter in CI."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

# Golden files: the `golden` fixture and `pytest --update-goldens` (docs/goldens.md);
# pytester runs small pytest sessions in the golden tooling's own tests.
pytest_plugins = ["pytester", "repro.golden_plugin"]
