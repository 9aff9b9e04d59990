"""Hostile dump text (deep nesting, huge sums, huge literals) gives one
located error naming tirc's limit, through `parse` and through `tirc
verify` (exit 2, no traceback), never a RecursionError, a lark VisitError or
a hang; expressions at the limits still verify and round-trip."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from tir_helpers import check_text, line_of, replace_once

from ir_text import TircError, parse, print_ir
from ir_text.text_bounds import MAX_INDEX_DEPTH, MAX_INDEX_NODES, MAX_LIST_DEPTH, MAX_RANK

FILE = "hostile.tir"
LOCATED = re.compile(r"^(?P<file>[^\n]+?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>[^\n]+)$")
LOAD = "load %x[5*i0 + i1]"  # the first load of chain4's lower stage
# Far past the old failures (Python's 1000 frames; a sum of 5000 terms) and
# cheap to parse; the command-line test feeds the reported sizes.
DEEP = 3000


def _index(expr: str):
    return lambda text: replace_once(text, LOAD, f"load %x[{expr}]")


def _sub(old: str, new: str):
    return lambda text: replace_once(text, old, new)


# name: (edit of chain4's lower stage, a substring of the edited line, the message wanted)
CASES = {
    "3000 unary minuses": (
        _index("- " * DEEP + "i1"),
        "load %x[- - -",
        f"index expression nests deeper than {MAX_INDEX_DEPTH} levels (tirc's limit)",
    ),
    "3000 nested negated parentheses": (
        _index("-(" * DEEP + "i1" + ")" * DEEP),
        "load %x[-(-(",
        f"nests deeper than {MAX_INDEX_DEPTH} levels",
    ),
    "3000 nested floordivs": (
        _index("floordiv(" * DEEP + "i1" + ", 2)" * DEEP),
        "load %x[floordiv(floordiv(",
        f"nests deeper than {MAX_INDEX_DEPTH} levels",
    ),
    "a 6000-term sum": (
        _index(" + ".join(["i1"] * 2 * DEEP)),
        "load %x[i1 + i1 + ",
        f"index expression has more than {MAX_INDEX_NODES} terms and operators (tirc's limit)",
    ),
    "a 5000-digit index constant": (
        _index("1" * 5000 + "*i1"),
        "load %x[1111",
        "11111111111111111111... (5000 characters) is outside the range of int64 (an index constant)",
    ),
    "a 5000-digit attribute": (
        _sub("{value = 1.0}", "{value = " + "7" * 5000 + "}"),
        "{value = 777",
        "(5000 characters) is outside the range of int64",
    ),
    "an attribute past int64": (
        _sub("{value = 1.0}", "{value = -9223372036854775809}"),
        "{value = -9223372036854775809}",
        "-9223372036854775809 is outside the range of int64",
    ),
    "a 5000-digit size": (
        _sub("input %x : f32[4, 5]", "input %x : f32[4, " + "5" * 5000 + "]"),
        "input %x",
        "(5000 characters) is outside the range of int64 (a size or stride)",
    ),
    "a loop range past int64": (
        _sub("%buf0 = loop.pointwise [i0 < 4,", "%buf0 = loop.pointwise [i0 < 99999999999999999999,"),
        "%buf0 = loop.pointwise",
        "99999999999999999999 is outside the range of int64 (a loop range)",
    ),
    "a constant floordiv by zero": (
        _index("floordiv(5, 0)"),
        "load %x[floordiv(5, 0)]",
        "bad index: floordiv by a value that is not positive",
    ),
    "an index op's mod by zero": (
        _sub("%0 = " + LOAD + " : f32", "%0 = index [mod(i1, 0)] : i64"),
        "index [mod(i1, 0)]",
        "bad index: mod by a value that is not positive",
    ),
    "5000 nested list literals": (
        _sub("{value = 1.0}", "{value = " + "[" * 5000 + "1.0" + "]" * 5000 + "}"),
        "{value = [[[",
        f"list literal nests deeper than {MAX_LIST_DEPTH} levels (tirc's limit)",
    ),
    "a shape of 1000 dimensions": (
        _sub("input %x : f32[4, 5]", "input %x : f32[" + ", ".join(["1"] * 1000) + "]"),
        "input %x",
        f"1000 dimensions, more than {MAX_RANK} (tirc's limit)",
    ),
}


@pytest.fixture(scope="module")
def lower(dumps):
    return dumps["chain"]["lower"]


@pytest.mark.parametrize("name", CASES)
def test_hostile_text_gives_one_located_error(lower, name):
    edit, needle, message = CASES[name]
    text = edit(lower)
    err = check_text(text, FILE)
    assert err is not None, "the hostile text was accepted"
    formatted = err.format()
    match = LOCATED.match(formatted)
    assert match, formatted[:300]
    assert match["file"] == FILE and int(match["line"]) == line_of(text, needle), formatted[:300]
    assert message in match["msg"], formatted[:300]
    # Where parsing refuses the text, the fast path (read-backs parse without
    # positions) fails over to the located parse and its error.
    try:
        parse(text, FILE)
    except TircError as parsed:
        with pytest.raises(TircError) as caught:
            parse(text, FILE, positions=False)
        assert caught.value.format() == parsed.format() == formatted


# 2047 nodes: a tree of binary operators has an odd count, so the most the limit allows.
_SUM_AT_LIMIT = "i1 - i1 + " * (MAX_INDEX_NODES // 4 - 2) + "5*i0 + i1 + 0"


@pytest.mark.parametrize(
    "at_limit, past_limit",
    [
        ("- " * (MAX_INDEX_DEPTH - 1) + "i1", "- " * MAX_INDEX_DEPTH + "i1"),
        (
            "mod(" * (MAX_INDEX_DEPTH - 1) + "i1" + ", 7)" * (MAX_INDEX_DEPTH - 1),
            "mod(" * MAX_INDEX_DEPTH + "i1" + ", 7)" * MAX_INDEX_DEPTH,
        ),
        (_SUM_AT_LIMIT, _SUM_AT_LIMIT + " + 0"),
    ],
    ids=["minus", "mod", "sum"],
)
def test_the_limits_are_exact(lower, at_limit, past_limit):
    parse(_index(at_limit)(lower), FILE)
    with pytest.raises(TircError, match="tirc's limit"):
        parse(_index(past_limit)(lower), FILE)


@pytest.mark.parametrize(
    "expr",
    [
        "floordiv(" * (MAX_INDEX_DEPTH - 1) + "i1" + ", 2)" * (MAX_INDEX_DEPTH - 1),
        "min(19, max(0, " * (MAX_INDEX_DEPTH // 2 - 1) + "i1" + "))" * (MAX_INDEX_DEPTH // 2 - 1),
        "- " * (MAX_INDEX_DEPTH - 1) + "i1",  # an odd count: -i1, outside the source
        _SUM_AT_LIMIT,
    ],
    ids=["floordiv", "min-max", "minus", "sum"],
)
def test_index_expressions_at_the_limits_parse_verify_and_round_trip(lower, expr):
    text = _index(expr)(lower)
    module = parse(text, FILE)
    err = check_text(text, FILE)
    if expr.startswith("- "):
        assert err is not None and "index range [-4, 0] is outside" in err.message, err
    else:
        assert err is None, err
    assert print_ir(parse(print_ir(module))) == print_ir(module)


def test_tirc_verify_exits_2_with_one_line_per_hostile_file(lower, tmp_path):
    """The reported defects through the real command line, in a fresh process
    (whose stack and int-conversion limits are Python's defaults)."""
    texts = {
        "minus.tir": _index("- " * 20000 + "i1")(lower),
        "parens.tir": _index("-(" * 20000 + "i1" + ")" * 20000)(lower),
        "sum.tir": _index(" + ".join(["i1"] * 20000))(lower),
        "digits.tir": _index("1" * 5000)(lower),
        "size.tir": _sub("input %x : f32[4, 5]", "input %x : f32[99999999999999999999, 5]")(lower),
    }
    paths = []
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    run = subprocess.run(
        [sys.executable, "-m", "tirc", "verify", *paths], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 2, run.stderr[-2000:]
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run.stderr[-2000:]
    lines = run.stderr.splitlines()
    assert len(lines) == len(paths), run.stderr[-2000:]
    for path, line in zip(paths, lines):
        match = LOCATED.match(line)
        assert match and match["file"] == path, line[:300]


def test_float_literals_past_float64_read_as_python_reads_them(lower):
    """1e999999 is inf (as the printer's `inf`), -1e999999 is -inf, 1e-999999 is 0.0."""
    for literal, value in (("1e999999", "inf"), ("-1e999999", "-inf"), ("1e-999999", "0.0")):
        text = _sub("{value = 1.0}", f"{{value = {literal}}}")(lower)
        assert check_text(text, FILE) is None
        assert f"{{value = {value}}}" in print_ir(parse(text, FILE))
