"""One error type for every user-facing failure, with an optional source position."""

from __future__ import annotations


class TircError(Exception):
    """A problem in the user's input, reported as `FILE:LINE:COL: error: MESSAGE`."""

    def __init__(
        self,
        message: str,
        file: str | None = None,
        line: int | None = None,
        col: int | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.col = col

    def located(self, file: str) -> "TircError":
        """The same error, attributed to `file` when it names no file yet."""
        if self.file is None:
            self.file = file
        return self

    def format(self) -> str:
        where = self.file or "<input>"
        if self.line is not None:
            where += f":{self.line}"
            if self.col is not None:
                where += f":{self.col}"
        return printable(f"{where}: error: {self.message}")

    def __str__(self) -> str:
        return self.format()


def error_at(pos, message: str) -> TircError:
    """A TircError at a parsed object's `(line, col)` position (or none)."""
    line, col = pos if pos else (None, None)
    return TircError(message, line=line, col=col)


def number_text(n: int) -> str:
    """An integer for a message: in full up to 30 digits, else by its power of
    two (a product of a hostile file's sizes may have more digits than
    Python prints, and no reader wants them)."""
    if abs(n) < 10**30:
        return str(n)
    return f"{'-' if n < 0 else ''}about 2**{abs(n).bit_length() - 1}"


def first_line(err: BaseException) -> str:
    """The first line of an exception's message ("" when it has none)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else ""


def printable(text: str) -> str:
    """`text` with its control characters escaped as Python writes them
    (`\\n`, `\\x1b`): a dump's strings (its source name, a location, a
    device) reach messages, and must neither break a message's one line nor
    move the terminal's cursor, nor forge a line such as tirc's "ok"."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
