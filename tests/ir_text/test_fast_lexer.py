"""The read-back parser's own lexing loop (fast_parser._lex_without_positions):
installed, and reading every stage's text as lark's lexer does: the same
module, printed back byte for byte; a text it cannot lex falls back to the
positioned parser's message."""

from __future__ import annotations

from pathlib import Path

import pytest

from ir_text import TircError, parse, print_ir
from ir_text.fast_parser import _inline_parser, _parse_unpositioned

GOLDEN = sorted((Path(__file__).resolve().parents[1] / "golden" / "cases").glob("*/*.tir"))


def test_the_fast_loop_is_installed():
    parser, _, _ = _inline_parser()
    lexer = parser.parser.lexer
    assert "lex" in vars(lexer)  # the instance's own loop, not the class's


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_stage_reads_as_with_lark_s_lexer(path):
    text = path.read_text()
    fast = _parse_unpositioned(text)  # None if it failed (parse would then retry with positions)
    assert fast is not None
    assert print_ir(fast) == text == print_ir(parse(text, path.name))


def test_a_text_it_cannot_lex_gets_the_positioned_message():
    text = (GOLDEN[0].read_text()).replace("%", "§", 1)
    with pytest.raises(TircError) as err:
        parse(text, "bad.tir", positions=False)
    assert err.value.line is not None
