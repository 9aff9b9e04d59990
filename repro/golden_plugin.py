"""The pytest side of golden tests: the `--update-goldens` option and the
`golden` fixture. Load it with `pytest_plugins = ["repro.golden_plugin"]` in
the rootdir's conftest (tests/conftest.py here); docs/goldens.md explains the
layout of a golden case."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.golden import check_lines, compare_golden


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite golden files with the actual output instead of comparing with them",
    )


class Golden:
    """What a test holds as `golden`: whole-file checks and CHECK-line checks
    that fail the test with the diff or the failing directive, no traceback."""

    def __init__(self, update: bool, root: Path):
        self.update = update
        self.root = root

    def check(self, expected_path: Path, actual: str) -> None:
        """`actual` must equal the file's text (with --update-goldens: becomes it)."""
        message = compare_golden(expected_path, actual, self.update, name=self._name(expected_path))
        if message is not None:
            pytest.fail(message, pytrace=False)

    def check_lines(self, text: str, checks: str | list[str]) -> None:
        """`text` must satisfy the CHECK directives (repro.golden.check_lines)."""
        message = check_lines(text, checks)
        if message is not None:
            pytest.fail(message, pytrace=False)

    def _name(self, path: Path) -> str:
        """The path relative to the rootdir, so messages name no machine's paths."""
        path = Path(path).resolve()
        return path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else str(path)


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Golden:
    config = request.config
    return Golden(config.getoption("--update-goldens"), config.rootpath.resolve())
