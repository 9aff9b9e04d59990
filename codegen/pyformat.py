"""The wrapper's Python statements laid out as black lays them out, without
running black.

The wrapper is made of few constructs: assignments, calls, subscripts,
tuples and lists of names and literals. Any of them longer than a line
splits the way black's right-hand split does. black itself was the largest
Python cost of a cold compile after parsing the IR (measured:
docs/design-notes.md, "Codegen"). Triton kernel bodies,
whose expressions are arbitrary, still go through black (wrapper.py).
tests/codegen/test_pyformat.py holds this layout to black's on the goldens
and on random programs of both backends.
"""

from __future__ import annotations

import keyword
import re

LINE_LENGTH = 88  # black's default
_CLOSING = ")]}"
_QUOTES = "\"'"


def layout(line: str) -> list[str]:
    """`line`, one statement with its indentation, as black splits it when
    it is too long: at the last bracket pair, with the head before it and the
    closing bracket and what follows on lines of their own; the contents on
    one line when they fit, else one item a line, each with a trailing
    comma, and each split again the same way. A list, tuple or dict
    display (not a call's or subscript's brackets) of several items goes one
    item a line even when its contents would fit on one (black's
    `should_split_line`). A trailing comment counts in the line's length
    and follows the closing bracket when the line splits."""
    if len(line) <= LINE_LENGTH:
        return [line]
    code, comment = _trailing_comment(line)
    lines = _split(code)
    lines[-1] += comment
    return lines


def _split(line: str) -> list[str]:
    """layout's split of a statement without a comment, even when it fits."""
    stripped = line.lstrip(" ")
    indent = line[: len(line) - len(stripped)]
    text = _parenthesized_targets(stripped)
    pair = _last_pair(text)
    if pair is None:
        return [line]  # no bracket to split at: black leaves such a line long too
    start, end = pair
    head, body, tail = text[: start + 1], text[start + 1 : end].strip(), text[end:]
    inner = indent + "    "
    items = _items(body)
    if len(inner) + len(body) <= LINE_LENGTH and not (len(items) > 1 and _is_display(text, start)):
        middle = [inner + body]
    elif len(items) == 1:
        middle = layout(inner + body)  # one item: split inside it, no comma added
    else:
        middle = [part for item in items for part in layout(f"{inner}{item},")]
    return [indent + head, *middle, indent + tail]


def _trailing_comment(line: str) -> tuple[str, str]:
    """(statement, "  # comment") of a line ending in a comment, else (line, "")."""
    start = next((k for k, char in _code_chars(line) if char == "#"), None)
    if start is None:
        return line, ""
    return line[:start].rstrip(" "), "  " + line[start:]


def py_string(text: str) -> str:
    """A string literal in black's preferred quotes: double, unless that
    needs more escapes than single."""
    literal = repr(text)
    if not literal.startswith("'"):
        return literal
    body = literal[1:-1]
    double = body.replace("\\'", "'").replace('"', '\\"')
    return f'"{double}"' if double.count('\\"') <= body.count("\\'") else literal


def _parenthesized_targets(text: str) -> str:
    """`a, b = value` as `(a, b) = value` when the value holds no bracket
    to split at: black then splits the targets."""
    equals = next((k for k, char in _code_chars(text) if char == "=" and text[k - 1 : k + 2] == " = "), None)
    if equals is None or _last_pair(text[equals:]) is not None:
        return text
    targets = text[: equals - 1]
    if len(_items(targets)) < 2 or _last_pair(targets) == (0, len(targets) - 1):
        return text
    return f"({targets}){text[equals - 1:]}"


def _last_pair(text: str) -> tuple[int, int] | None:
    """The offsets of the opening and closing brackets of the last bracket
    pair at depth 0 (outside strings), or None when there is none."""
    depth, opened, last = 0, 0, None
    for k, char in _code_chars(text):
        if char in "([{":
            if depth == 0:
                opened = k
            depth += 1
        elif char in _CLOSING:
            depth -= 1
            if depth == 0:
                last = (opened, k)
    return last


def _is_display(text: str, start: int) -> bool:
    """Whether the bracket at `start` opens a display, not a call's or a
    subscript's trailer: it follows an operator, a comma, an opening bracket
    or a keyword, not a name or a closing bracket."""
    before = text[:start].rstrip(" ")
    if not before:
        return True
    word = re.search(r"\w+$", before)
    if word is not None:
        return keyword.iskeyword(word.group())
    return before[-1] not in ")]}"


def _items(body: str) -> list[str]:
    """The comma-separated items at depth 0 of a bracket's contents, without
    a trailing empty one."""
    items, depth, start = [], 0, 0
    for k, char in _code_chars(body):
        if char in "([{":
            depth += 1
        elif char in _CLOSING:
            depth -= 1
        elif char == "," and depth == 0:
            items.append(body[start:k].strip())
            start = k + 1
    rest = body[start:].strip()
    return items + [rest] if rest else items


def _code_chars(text: str):
    """(offset, character) for each character of `text` outside string
    literals."""
    quote, escaped = None, False
    for k, char in enumerate(text):
        if quote is not None:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
        elif char in _QUOTES:
            quote = char
        else:
            yield k, char
