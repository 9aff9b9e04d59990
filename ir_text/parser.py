"""Text -> Module: the entry point, and its errors for text that does not parse.

The positioned parse builds a tree and transforms it with `builder._Builder`;
text the printer just wrote takes the fast path (fast_parser) and comes back
here only for the message when it fails. Every ATen op the text names is
checked against the allow-list of pure ops (op_policy).
"""

from __future__ import annotations

import functools

import lark

from .builder import _Builder
from .errors import TircError
from .fast_parser import _parse_unpositioned
from .grammar_tables import lalr_parser
from .model import Module
from .op_policy import check_text_ops

# Readable names for the grammar's terminals in "expected ..." messages.
_TOKEN_NAMES = {
    "VALUE": "a %value",
    "SYMBOL": "an @symbol",
    "NAME": "a name",
    "OPNAME": "an op name",
    "INT": "an integer",
    "FLOAT": "a number",
    "STRING": "a string",
}


@functools.lru_cache(maxsize=1)
def _lark() -> lark.Lark:
    return lalr_parser(propagate_positions=True)


def _quoted(text: str) -> str:
    """A token for a one-line message: quoted, control characters escaped
    (a form feed in a string literal would break the line), long ones cut."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return f"'{text[:60]}...'" if len(text) > 60 else f"'{text}'"


def _describe_expected(expected) -> str:
    names = sorted({_TOKEN_NAMES.get(t, None) or _literal_name(t) for t in expected})
    if len(names) > 6:
        names = names[:6] + ["..."]
    return ", ".join(names)


def _literal_name(terminal: str) -> str:
    if terminal == "$END":
        return "the end of the file"
    pattern = _lark().get_terminal(terminal).pattern
    return f"'{pattern.value}'" if pattern.type == "str" else terminal.lower()


def _at_end(text: str, pos: int) -> bool:
    """Whether `pos` lies in the file's last, cut-off token (nothing but it follows)."""
    rest = text[pos:]
    return not rest.strip() or (rest == rest.rstrip() and not any(c.isspace() for c in rest))


def _end_of_file(text: str, filename: str, expected, detail: str = "") -> TircError:
    lines = text.splitlines() or [""]
    wanted = f" (expected {_describe_expected(expected)})" if expected else ""
    return TircError(f"unexpected end of file{detail}{wanted}", filename, len(lines), len(lines[-1]) + 1)


def parse(
    text: str, filename: str = "<input>", positions: bool = True, trusted_ops: frozenset[str] = frozenset()
) -> Module:
    """Parse IR text into a Module. Raises TircError with the file, line and column.

    Text is untrusted: every ATen op it names must be on the allow-list of
    pure ops (op_policy), except those in `trusted_ops`, which the caller
    vouches for (the ops of the program it traced and printed itself).
    """
    module = _parse_text(text, filename, positions)
    try:
        check_text_ops(module, trusted_ops)
    except TircError as err:
        if not positions:  # parsed again, for the position
            return parse(text, filename, True, trusted_ops)
        raise err.located(filename) from None
    return module


def _parse_text(text: str, filename: str, positions: bool) -> Module:
    """The module in `text`, any ops (see `parse`).

    A file cut off in the middle of its last token (a truncated dump) is
    reported as an unexpected end of file, not as a bad character.

    `positions=False` leaves the ops' source positions out (`pos` is None)
    and builds the module while lark parses, with no tree in between, which
    is faster (measured: docs/design-notes.md, "Pipeline"). It is for text
    the printer just wrote, where a failure is a compiler bug and is
    reported by parsing again with them.
    """
    if not positions:
        module = _parse_unpositioned(text)
        return module if module is not None else _parse_text(text, filename, True)
    try:
        tree = _lark().parse(text)
    except lark.exceptions.UnexpectedEOF as err:
        raise _end_of_file(text, filename, err.expected) from None
    except lark.exceptions.UnexpectedCharacters as err:
        if _at_end(text, err.pos_in_stream) or (
            text[err.pos_in_stream] == '"' and '"' not in text[err.pos_in_stream + 1 :]
        ):
            raise _end_of_file(text, filename, None, " (the last token is cut off)") from None
        raise TircError(
            f"unexpected character {text[err.pos_in_stream]!r}", filename, err.line, err.column
        ) from None
    except lark.exceptions.UnexpectedToken as err:
        if err.token.type == "$END":
            raise _end_of_file(text, filename, err.expected) from None
        if _at_end(text, err.token.start_pos):
            raise _end_of_file(text, filename, err.expected, " (the last token is cut off)") from None
        raise TircError(
            f"unexpected {_quoted(str(err.token))} (expected {_describe_expected(err.expected)})",
            filename,
            err.line,
            err.column,
        ) from None
    try:
        module = _Builder().transform(tree)
    except lark.exceptions.VisitError as err:
        if isinstance(err.orig_exc, TircError):
            raise err.orig_exc.located(filename) from None
        raise
    if module.outputs_pos is None:
        # Every printed module has one; a file without it was most likely cut off.
        raise _end_of_file(text, filename, None, ": the module has no 'return (...)'")
    return module
