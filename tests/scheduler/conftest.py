"""The scheduler tests compare results as the codegen tests do (tests/codegen/matching.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "codegen"))
