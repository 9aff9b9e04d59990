"""Golden-file tests: whole-file snapshots with a diff on failure, and targeted
CHECK lines for what a test cares about.

`compare_golden` is the snapshot half (as expecttest's accept mode and LLVM's
update_test_checks.py: a mismatch prints a unified diff, an update mode
rewrites the file). `check_lines` is the targeted half, a small FileCheck:
MLIR's testing guide asks tests to check only what a pass changes, which a
snapshot cannot do. The pytest side lives in `repro.golden_plugin`; this
module imports no pytest.
"""

from __future__ import annotations

import bisect
import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

UPDATE_HINT = "run pytest --update-goldens"
CONTEXT_LINES = 3


# ---- whole-file goldens ----------------------------------------------------


def compare_golden(expected_path: Path, actual: str, update: bool, name: str | None = None) -> str | None:
    """None when `expected_path` holds exactly `actual`, else a message with a
    unified diff. With `update`, (re)write the file instead and return None.
    `name` is how the file is shown in messages (default: the path as given)."""
    expected_path = Path(expected_path)
    name = name or expected_path.as_posix()
    if update:
        _write_if_changed(expected_path, actual)
        return None
    if not expected_path.exists():
        return f"golden file {name} is missing; {UPDATE_HINT} to create it"
    expected = expected_path.read_bytes()
    if expected == actual.encode("utf-8"):
        return None
    return f"{name} differs from the actual output ({UPDATE_HINT} to accept it):\n" + unified_diff(
        expected.decode("utf-8", errors="replace"), actual, name
    )


def unified_diff(expected: str, actual: str, name: str) -> str:
    lines = difflib.unified_diff(
        _diff_lines(expected),
        _diff_lines(actual),
        fromfile=f"expected/{name}",
        tofile=f"actual/{name}",
        n=CONTEXT_LINES,
    )
    return "".join(lines)


def _diff_lines(text: str) -> list[str]:
    """Lines for difflib; a last line without a newline is marked as GNU diff
    does, so a difference in the final newline alone still shows."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def _write_if_changed(path: Path, text: str) -> None:
    """Write atomically (tirc's own writer: a temporary file renamed), so an
    interrupted update never leaves a half-written golden. An unchanged file
    is left alone (its timestamp too)."""
    from tirc import write_atomic  # tirc's CLI imports repro: import it when used

    if path.exists() and path.read_bytes() == text.encode("utf-8"):
        return
    write_atomic(path, text)


# ---- CHECK lines -----------------------------------------------------------

# `// CHECK-NEXT: pattern` or `# CHECK-NEXT: pattern`; the comment marker is
# optional only for checks given as a list.
_DIRECTIVE = re.compile(r"^\s*(?P<marker>//|#)?\s*(?P<name>CHECK(?:-[A-Z0-9]+)*)\s*:(?P<pattern>.*)$")
_COUNT = re.compile(r"CHECK-COUNT-(\d+)")
_KINDS = ("CHECK", "CHECK-NEXT", "CHECK-SAME", "CHECK-NOT", "CHECK-LABEL")


class CheckError(Exception):
    """A failed or malformed directive; the message is what check_lines returns."""


@dataclass(frozen=True)
class Directive:
    kind: str  # one of _KINDS, or "CHECK-COUNT" with `count`
    pattern: str  # as written, whitespace stripped
    regex: re.Pattern
    where: str  # "check line 4": where it stands in the check source
    count: int = 1

    def describe(self) -> str:
        name = f"CHECK-COUNT-{self.count}" if self.kind == "CHECK-COUNT" else self.kind
        return f"{self.where}: {name}: {self.pattern}"


def check_lines(text: str, checks: str | list[str]) -> str | None:
    """Match `text` against FileCheck-style directives, as LLVM FileCheck reads
    them: None when every directive holds, else a message naming the failing
    directive and showing the input where scanning stood.

    `checks` is a check source (a .tir or .py file, a docstring) whose
    directives are the lines `// CHECK...:` or `# CHECK...:`, or a list with
    one directive per item (the comment marker optional)."""
    try:
        directives = parse_checks(checks)
        _Scanner(text).run(directives)
    except CheckError as err:
        return str(err)
    return None


def parse_checks(checks: str | list[str]) -> list[Directive]:
    from_list = not isinstance(checks, str)
    lines = list(checks) if from_list else checks.splitlines()
    directives = []
    for number, line in enumerate(lines, 1):
        m = _DIRECTIVE.match(line)
        if m is None or (m["marker"] is None and not from_list):
            if from_list:
                raise CheckError(f"check {number}: not a CHECK directive: {line.strip()!r}")
            continue
        where = f"check {number}" if from_list else f"check line {number}"
        directives.append(_directive(m["name"], m["pattern"].strip(), where))
    if not directives:
        raise CheckError("no CHECK directives found in the checks")
    positive = [d for d in directives if d.kind != "CHECK-NOT"]
    if positive and positive[0].kind in ("CHECK-NEXT", "CHECK-SAME"):
        first = positive[0]
        raise _bad(first.where, first.kind, first.pattern, "there is no match before it to follow")
    return directives


def _directive(name: str, pattern: str, where: str) -> Directive:
    count = _COUNT.fullmatch(name)
    if name not in _KINDS and count is None:
        raise _bad(where, name, pattern, f"unknown directive (known: {', '.join(_KINDS)}, CHECK-COUNT-N)")
    if count is not None and int(count[1]) < 1:
        raise _bad(where, name, pattern, "the count must be at least 1")
    if not pattern:
        raise _bad(where, name, pattern, "the pattern is empty")
    try:
        regex = re.compile(_pattern_regex(pattern), re.MULTILINE)
    except re.error as err:
        raise _bad(where, name, pattern, f"bad {{{{regex}}}}: {err.msg}") from None
    if count is not None:
        return Directive("CHECK-COUNT", pattern, regex, where, int(count[1]))
    return Directive(name, pattern, regex, where)


def _bad(where: str, name: str, pattern: str, problem: str) -> CheckError:
    return CheckError(f"{where}: {name}: {pattern}\n  error: {problem}")


def _pattern_regex(pattern: str) -> str:
    """Literal text, except `{{regex}}` blocks (FileCheck's syntax)."""
    parts = re.split(r"\{\{(.*?)\}\}", pattern)
    return "".join(f"(?:{part})" if k % 2 else re.escape(part) for k, part in enumerate(parts))


class _Scanner:
    """One pass over the input, as FileCheck: each positive match moves the
    position on; CHECK-NOTs wait for the next positive match (or the end) to
    know the range they forbid; CHECK-LABELs are matched first and fence the
    directives between them into their block."""

    def __init__(self, text: str):
        self.text = text
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.pos = 0  # where the previous match ended
        self.line = 0  # the line the previous match ended on
        self.limit = len(text)  # the start of the next label's match
        self.pending_nots: list[Directive] = []

    def run(self, directives: list[Directive]) -> None:
        labels = self._match_labels(directives)
        ends = [m.start() for m in labels[1:]] + [len(self.text)]
        self.limit = labels[0].start() if labels else len(self.text)
        for directive in directives:
            if directive.kind == "CHECK-LABEL":
                self._accept(labels.pop(0))
                self.limit = ends.pop(0)
            else:
                _STEPS[directive.kind](self, directive)
        self._resolve_nots(self.limit)

    def _match_labels(self, directives: list[Directive]) -> list[re.Match]:
        matches, pos = [], 0
        for directive in (d for d in directives if d.kind == "CHECK-LABEL"):
            m = directive.regex.search(self.text, pos)
            if m is None:
                self._fail(directive, "label not found", pos)
            matches.append(m)
            pos = m.end()
        return matches

    # -- the directives

    def _check(self, directive: Directive) -> None:
        m = directive.regex.search(self.text, self.pos, self.limit)
        if m is None:
            self._fail(directive, "not found", self.pos)
        self._accept(m)

    def _check_count(self, directive: Directive) -> None:
        for found in range(directive.count):
            m = directive.regex.search(self.text, self.pos, self.limit)
            if m is None:
                self._fail(directive, f"matched {found} of {directive.count} times", self.pos)
            self._accept(m)

    def _check_next(self, directive: Directive) -> None:
        start, end = self._line_span(self.line + 1)
        m = directive.regex.search(self.text, start, min(end, self.limit))
        if m is None:
            elsewhere = directive.regex.search(self.text, self.pos, self.limit)
            hint = f" (found on line {self._line_of(elsewhere.start()) + 1})" if elsewhere else ""
            self._fail(directive, f"not found on the line after line {self.line + 1}{hint}", start)
        self._accept(m)

    def _check_same(self, directive: Directive) -> None:
        end = min(self._line_span(self.line)[1], self.limit)
        m = directive.regex.search(self.text, self.pos, end)
        if m is None:
            self._fail(directive, f"not found on line {self.line + 1} after the previous match", self.pos)
        self._accept(m)

    def _check_not(self, directive: Directive) -> None:
        self.pending_nots.append(directive)

    # -- bookkeeping

    def _accept(self, m: re.Match) -> None:
        self._resolve_nots(m.start())
        self.pos = m.end()
        self.line = self._line_of(max(m.start(), m.end() - 1))

    def _resolve_nots(self, end: int) -> None:
        for directive in self.pending_nots:
            m = directive.regex.search(self.text, self.pos, end)
            if m is not None:
                self._fail(directive, "found, but must not occur here", m.start())
        self.pending_nots = []

    def _line_of(self, pos: int) -> int:
        return bisect.bisect_right(self.line_starts, pos) - 1

    def _line_span(self, line: int) -> tuple[int, int]:
        """The [start, end) of a 0-based line, without its newline."""
        if line >= len(self.line_starts):
            return len(self.text), len(self.text)
        start = self.line_starts[line]
        newline = self.text.find("\n", start)
        return start, len(self.text) if newline < 0 else newline

    def _fail(self, directive: Directive, problem: str, pos: int) -> NoReturn:
        raise CheckError(f"{directive.describe()}\n  error: {problem}\n{self._excerpt(pos)}")

    def _excerpt(self, pos: int, before: int = 2, after: int = 3) -> str:
        """The input around `pos`, its line marked `>` and its column `^`."""
        line = self._line_of(pos)
        # A final newline ends the last line; it does not start a line to show.
        lines = len(self.line_starts) - (1 if self.text.endswith("\n") else 0)
        shown = [f"input near line {line + 1}:"]
        for k in range(max(0, line - before), max(line + 1, min(lines, line + after + 1))):
            start, end = self._line_span(k)
            shown.append(f"{'>' if k == line else ' '} {k + 1:5} | {self.text[start:end]}".rstrip())
            if k == line:
                shown.append(" " * 8 + "| " + " " * (pos - start) + "^")
        return "\n".join(shown)


_STEPS = {
    "CHECK": _Scanner._check,
    "CHECK-COUNT": _Scanner._check_count,
    "CHECK-NEXT": _Scanner._check_next,
    "CHECK-SAME": _Scanner._check_same,
    "CHECK-NOT": _Scanner._check_not,
}
