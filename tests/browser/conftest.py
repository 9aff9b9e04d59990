"""The report's browser tests: small models compiled with `--dump-after=all
--report`, their pages loaded in a real headless Chromium (Debian's package,
driven by Playwright; the Makefile installs it, never Playwright's own
browsers). A page must load with no console error, no page error and no
request but its own file."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from filelock import FileLock

from tests.browser.report_models import model_files
from tirc.cli import main


@dataclass
class Report:
    """A compiled model's dump directory and the data its report embeds."""

    name: str
    directory: Path

    @property
    def path(self) -> Path:
        return self.directory / "report.html"

    @property
    def url(self) -> str:
        return self.path.resolve().as_uri()

    def data(self) -> dict:
        html = self.path.read_text()
        match = re.search(r'<script type="application/json" id="tirc-data">(.*?)</script>', html, re.S)
        return json.loads(match.group(1))


def compile_with_report(source: Path, dump_dir: Path, *extra) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(
            ["compile", str(source), "--dump-after=all", "--dump-dir", str(dump_dir), "--report", *extra]
        )
    assert code == 0, err.getvalue()
    assert "tirc: report in" in err.getvalue()


@pytest.fixture(scope="session")
def report(tmp_path_factory):
    """`report(name)`: the report of tests/browser/models/NAME.py, compiled
    once for the whole run: the pytest-xdist workers share the directory
    above their own temporary ones, and the first to need a model compiles
    it there under a file lock."""
    shared = tmp_path_factory.getbasetemp().parent / "browser-reports"
    shared.mkdir(exist_ok=True)

    def get(name: str) -> Report:
        root = shared / name
        with FileLock(str(shared / f"{name}.lock")):
            if not (root / "dumps" / "report.html").exists():
                shutil.rmtree(root, ignore_errors=True)
                root.mkdir()
                shutil.copy(model_files()[name], root / f"{name}.py")
                compile_with_report(root / f"{name}.py", root / "dumps")
        return Report(name, root / "dumps")

    return get


@pytest.fixture(scope="session")
def browser():
    executable = shutil.which("chromium")
    if executable is None:  # a failure, not a skip: `make test` installs it
        pytest.fail(
            "no chromium on PATH: the report's browser tests need Debian's chromium (make .venv/.installed)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@dataclass
class Watched:
    """A page and what it reported: console errors, page errors, requests."""

    page: object
    url: str = ""
    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def open(self, url: str) -> None:
        self.url = url
        self.page.goto(url)
        self.page.wait_for_selector("html[data-ready='1']", state="attached", timeout=20000)

    def assert_clean(self) -> None:
        assert self.console == [], self.console
        assert self.errors == [], self.errors
        assert [r for r in self.requests if r != self.url] == []


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    tab = context.new_page()
    watched = Watched(tab)
    tab.on("console", lambda m: watched.console.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: watched.errors.append(str(e)))
    tab.on("request", lambda r: watched.requests.append(r.url))
    yield watched
    context.close()


def _collect_while_scrolling(page, scroller: str, selector: str, row_js: str) -> dict[str, list]:
    """What `row_js` (a JavaScript function of an element, giving [key,
    ...values]) says of every element `selector` inside a virtualized list,
    which renders only the rows in view, by key: scrolled from the top to
    the bottom."""
    found = {}
    page.eval_on_selector(scroller, "el => { el.scrollTop = 0; }")
    while True:
        page.wait_for_timeout(60)
        for row in page.eval_on_selector_all(selector, f"els => els.map({row_js})"):
            found[row[0]] = row[1:]
        done = page.eval_on_selector(
            scroller,
            "el => { const end = el.scrollTop + el.clientHeight >= el.scrollHeight - 1;"
            " el.scrollTop += el.clientHeight; return end; }",
        )
        if done:
            return found


@pytest.fixture(scope="session")
def collect_while_scrolling():
    """`collect_while_scrolling(page, scroller, selector, row_js)`: see _collect_while_scrolling."""
    return _collect_while_scrolling
