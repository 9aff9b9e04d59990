"""Reading a user's text file and writing one atomically: what every command
needs, torch or not (`tirc fmt` imports only this and ir_text)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from ir_text import TircError


def read_text(path: str) -> str:
    """The text of the file at `path`, or one clear TircError naming it."""
    file = Path(path)
    try:
        # Not a FIFO or a device: reading one would block or never end.
        if file.exists() and not file.is_dir() and not file.is_file():
            raise TircError("not a regular file", path)
        return file.read_text()
    except FileNotFoundError:
        raise TircError("no such file", path) from None
    except IsADirectoryError:
        raise TircError("is a directory, not a file", path) from None
    except UnicodeDecodeError:
        raise TircError("not a text file", path) from None
    except OSError as err:
        raise TircError(err.strerror or str(err), path) from None


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never half of it."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(text_bytes(data))


@contextlib.contextmanager
def atomic_path(path: Path):
    """A temporary path beside `path` for the caller (or a library) to write;
    renamed over `path` when the block ends, removed if it raises."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        # mkstemp creates the file 0600; give it the mode a plain open() would.
        os.chmod(tmp, 0o666 & ~_umask())
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def text_bytes(data: str | bytes) -> bytes:
    """Text is written as UTF-8 with its newlines as they are."""
    return data if isinstance(data, bytes) else data.encode()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
