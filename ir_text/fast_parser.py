"""The read-back fast path of `parse(..., positions=False)`: the builder's
callbacks applied while lark parses, with no tree and no source positions,
and a lexing loop that counts no lines and columns."""

from __future__ import annotations

import functools
import threading

import lark
from lark import Token

from .builder import _Builder
from .errors import TircError
from .grammar_tables import lalr_parser
from .model import Module


def _unpositioned(method):
    return lambda self, children: method(self, None, children)


# _Builder's callbacks with no source position (meta None): lark applies
# them as it parses, building no tree, which it refuses to do for callbacks
# that take `meta`. The fast path of `parse(..., positions=False)`.
_InlineBuilder = type(
    "_InlineBuilder",
    (_Builder,),
    {
        name: _unpositioned(member.base_func)
        for name, member in vars(_Builder).items()
        if hasattr(member, "base_func")
    },
)


@functools.lru_cache(maxsize=1)
def _inline_parser() -> tuple[lark.Lark, _Builder, threading.Lock]:
    """A parser that builds the module while parsing, its builder (whose
    names must be cleared before each parse) and the lock that keeps two
    threads from sharing the builder at once."""
    builder = _InlineBuilder()
    parser = lalr_parser(transformer=builder)
    _lex_without_positions(parser)
    return parser, builder, threading.Lock()


def _lex_without_positions(parser: lark.Lark) -> None:
    """Give the fast path's contextual lexer a loop that counts no lines and
    columns (nothing reads positions there): the same per-state scanners,
    keyword callbacks and ignored terminals as lark's own loop, which spent
    most of its time on bookkeeping (measured: docs/design-notes.md,
    "Pipeline"). Left as lark's where its lexer is not laid out as lark
    1.3's is. A text that fails is parsed again by the positioned parser, with lark's
    own lexer, for the message."""
    lexer = getattr(parser.parser, "lexer", None)
    states = getattr(lexer, "lexers", None)
    if not isinstance(lexer, lark.lexer.ContextualLexer) or not isinstance(states, dict):
        return
    if not all(hasattr(s, "scanner") and hasattr(s, "ignore_types") for s in states.values()):
        return
    scanners = {}
    for state, basic in states.items():
        mres = getattr(basic.scanner, "_mres", None)  # building the scanner sets basic.callback
        if mres is None or not hasattr(basic, "callback"):
            return
        scanners[state] = (mres, basic.ignore_types, basic.callback)

    def lex(lexer_state, parser_state):
        text = lexer_state.text
        source = getattr(text, "text", text)
        pos, end = getattr(text, "start", 0), getattr(text, "end", len(source))
        while pos < end:
            mres, ignored, callbacks = scanners[parser_state.position]
            for mre in mres:
                match = mre.match(source, pos, end)
                if match:
                    break
            else:
                raise lark.exceptions.LexError(f"no token at offset {pos}")
            pos = match.end()
            kind = match.lastgroup
            if kind in ignored:
                continue
            token = Token(kind, match.group(0))
            callback = callbacks.get(kind)
            yield token if callback is None else callback(token)

    lexer.lex = lex


def _parse_unpositioned(text: str) -> Module | None:
    """The module in `text`, without positions; None when it does not parse
    or build (the caller parses again with positions, for the message)."""
    parser, builder, lock = _inline_parser()
    with lock:
        builder._reset()
        try:
            return parser.parse(text)
        except (lark.exceptions.LarkError, TircError):
            return None
