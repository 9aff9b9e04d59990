"""Shared test setup: Triton runs through its CPU interpreter in CI."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")
