"""The CHECK-line matcher (repro.golden.check_lines), directive by directive:
what each accepts, what each rejects, and what its message says."""

from __future__ import annotations

import pytest

from repro.golden import check_lines

TEXT = """\
%buf0 = loop.pointwise [i0 < 7] {
  %0 = load %x[i0] : f32
  store %0
}
%buf1 = loop.reduction [i0 < 7; r0 < 37] {
  %0 = load %buf0[r0] : f32
  %1 = reduce(%0) {reduction = sum} : f32
  store %1
}
fusion {
  kernel @k0 = fuse(%buf0)
  kernel @k1 = fuse(%buf1)
}
"""


def fails(checks, *needles):
    """The message of a failing check, which must hold every needle."""
    message = check_lines(TEXT, checks)
    assert message is not None, "the checks passed"
    for needle in needles:
        assert needle in message, message
    return message


@pytest.mark.parametrize(
    "checks",
    [
        ["CHECK: loop.pointwise", "CHECK: loop.reduction", "CHECK: fusion {"],
        ["CHECK: %buf1 = loop.reduction", "CHECK-NEXT: load %buf0", "CHECK-NEXT: reduce(%0)"],
        ["CHECK: %1 = reduce", "CHECK-SAME: {reduction = sum}", "CHECK-SAME: f32"],
        ["CHECK: loop.pointwise", "CHECK-NOT: reduce(", "CHECK: loop.reduction"],
        ["CHECK: fusion {", "CHECK-NOT: loop.reduction"],
        ["CHECK-COUNT-2: kernel @", "CHECK-NOT: kernel @"],
        ["CHECK: loop.pointwise", "CHECK-COUNT-2: load %"],
        ["CHECK: load %{{[a-z]+}}[{{i0|r0}}] : f32", "CHECK: load %buf0[{{r[0-9]}}]"],
        ["CHECK:    %buf0 = loop.pointwise   "],
    ],
    ids=[
        "check",
        "next",
        "same",
        "not-between",
        "not-to-end",
        "count",
        "count-after-check",
        "regex",
        "whitespace",
    ],
)
def test_checks_that_hold(checks):
    assert check_lines(TEXT, checks) is None


def test_check_finds_patterns_in_order_only():
    fails(["CHECK: fusion {", "CHECK: loop.pointwise"], "check 2: CHECK: loop.pointwise", "not found")


def test_check_may_match_later_on_the_same_line():
    assert check_lines(TEXT, ["CHECK: kernel", "CHECK: fuse(%buf0)"]) is None


def test_check_next_must_be_on_the_next_line():
    message = fails(
        ["CHECK: %buf1 = loop.reduction", "CHECK-NEXT: reduce(%0)"],
        "check 2: CHECK-NEXT: reduce(%0)",
        "not found on the line after line 5 (found on line 7)",
    )
    assert ">     6 |   %0 = load %buf0[r0] : f32" in message


def test_check_next_does_not_accept_the_same_line():
    fails(["CHECK: kernel @k0", "CHECK-NEXT: fuse(%buf0)"], "not found on the line after line 11")


def test_check_same_must_be_on_the_same_line():
    fails(["CHECK: %1 = reduce", "CHECK-SAME: store"], "CHECK-SAME: store", "not found on line 7")


def test_check_same_must_follow_the_previous_match():
    fails(["CHECK: {reduction = sum}", "CHECK-SAME: reduce("], "not found on line 7 after the previous match")


def test_check_not_between_matches_names_where_it_occurs():
    message = fails(
        ["CHECK: %buf0 = loop.pointwise", "CHECK-NOT: store", "CHECK: loop.reduction"],
        "check 2: CHECK-NOT: store",
        "found, but must not occur here",
        "input near line 3:",
    )
    lines = message.splitlines()
    marked = lines.index(">     3 |   store %0")
    assert lines[marked + 1] == "        |   ^"


def test_check_not_at_the_end_reaches_the_end():
    fails(["CHECK: loop.reduction", "CHECK-NOT: kernel @k1"], "CHECK-NOT: kernel @k1", "line 12")


def test_check_not_first_covers_the_start():
    fails(["CHECK-NOT: %buf0", "CHECK: fusion"], "CHECK-NOT: %buf0", "line 1")


def test_check_count_counts_matches_in_a_row():
    fails(["CHECK-COUNT-3: kernel @"], "CHECK-COUNT-3: kernel @", "matched 2 of 3 times")


def test_check_count_alone_does_not_forbid_more():
    """As LLVM's FileCheck: COUNT-N is N CHECKs; `exactly N` needs a CHECK-NOT after it."""
    assert check_lines(TEXT, ["CHECK-COUNT-1: kernel @"]) is None
    fails(["CHECK-COUNT-1: kernel @", "CHECK-NOT: kernel @"], "CHECK-NOT: kernel @", "line 12")


def test_label_fences_the_checks_of_its_block():
    """`store` occurs in the reduction's block, but not between the two labels."""
    checks = ["CHECK-LABEL: %buf0 = loop.pointwise", "CHECK: store", "CHECK: store"]
    fails(checks + ["CHECK-LABEL: %buf1 = loop.reduction"], "check 3: CHECK: store", "not found")
    assert check_lines(TEXT, checks) is None


def test_check_not_before_a_label_stops_at_the_label():
    checks = ["CHECK-LABEL: %buf0 =", "CHECK-NOT: reduce(", "CHECK-LABEL: %buf1 =", "CHECK: reduce("]
    assert check_lines(TEXT, checks) is None


def test_missing_label():
    fails(
        ["CHECK-LABEL: %buf1 =", "CHECK-LABEL: %buf0 ="], "check 2: CHECK-LABEL: %buf0 =", "label not found"
    )


def test_patterns_are_literal_outside_regex_blocks():
    fails(["CHECK: f32[7]"], "not found")
    fails(["CHECK: reduce(%0).*sum"], "not found")
    assert check_lines(TEXT, ["CHECK: reduce(%0){{.*}}sum"]) is None


def test_checks_read_from_comment_lines_of_a_source():
    source = """\
    // a .tir file with its checks
    // CHECK-LABEL: fusion {
    //  CHECK-NEXT: kernel @k0
    # CHECK-NEXT: kernel @k1 = fuse(%buf1)
    CHECK: not a directive: no comment marker
    """
    assert check_lines(TEXT, source) is None
    message = check_lines(TEXT, source.replace("@k1", "@k2"))
    assert message.startswith("check line 4: CHECK-NEXT: kernel @k2 = fuse(%buf1)\n"), message


@pytest.mark.parametrize(
    "checks, needle",
    [
        ("no directives here", "no CHECK directives found"),
        (["CHECK-NXT: x"], "check 1: CHECK-NXT: x\n  error: unknown directive"),
        (["CHECK: x", "just text"], "check 2: not a CHECK directive: 'just text'"),
        (["CHECK:   "], "the pattern is empty"),
        (["CHECK-COUNT-0: x"], "the count must be at least 1"),
        (["CHECK: {{[}}"], "check 1: CHECK: {{[}}\n  error: bad {{regex}}: unterminated character set"),
        (["CHECK-NOT: x", "CHECK-NEXT: y"], "CHECK-NEXT: y\n  error: there is no match before it"),
        ("# CHECK-SAME: y", "check line 1: CHECK-SAME: y"),
    ],
)
def test_malformed_checks_are_named(checks, needle):
    message = check_lines(TEXT, checks)
    assert message is not None and needle in message, message
