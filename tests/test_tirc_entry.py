"""The `tirc` console script (tirc_entry.py): Ctrl-C while `tirc.cli` (and
torch) is still being imported is `tirc: interrupted`, exit 2, as later."""

from __future__ import annotations

import builtins
import signal
from pathlib import Path

import pytest

import tirc.cli
import tirc_entry


@pytest.fixture
def importing_cli(monkeypatch):
    """`importing_cli(during)`: importing tirc.cli runs `during()` first; the
    command line itself, if reached, records that it ran."""
    ran = []
    monkeypatch.setattr(tirc.cli, "main", lambda argv=None: ran.append(argv) or 0)
    real_import = builtins.__import__

    def install(during):
        def fake_import(name, *args, **kwargs):
            if name == "tirc.cli":
                during()
            return real_import(name, *args, **kwargs)

        monkeypatch.setattr(builtins, "__import__", fake_import)
        return ran

    return install


def _interrupt():
    raise KeyboardInterrupt


def _swallowed_interrupt():
    """A Ctrl-C that the import catches, as torch's C module does when its
    import of numpy fails."""
    try:
        signal.raise_signal(signal.SIGINT)
    except KeyboardInterrupt:
        pass


@pytest.mark.parametrize("during", [_interrupt, _swallowed_interrupt], ids=["raised", "swallowed"])
def test_ctrl_c_during_the_imports_is_one_line(importing_cli, capsys, during):
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ran = importing_cli(during)
    try:
        code = tirc_entry.main()
    except KeyboardInterrupt:  # not raised on: it would stop the test session
        pytest.fail("KeyboardInterrupt escaped tirc_entry.main")
    assert code == 2
    assert capsys.readouterr().err == "tirc: interrupted\n"
    assert not ran  # the command did not start
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_without_ctrl_c_the_command_runs(importing_cli):
    ran = importing_cli(lambda: None)
    assert tirc_entry.main() == 0 and ran == [None]


def test_the_console_script_is_the_entry():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["tirc"] == "tirc_entry:main"
    assert "tirc_entry" in project["tool"]["setuptools"]["py-modules"]
