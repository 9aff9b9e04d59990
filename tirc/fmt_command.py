"""`tirc fmt [--check] FILE...`: each file rewritten in canonical form (the
printer's output), or with --check only reported.

Parsing is the whole cost once the imports are done, and files are
independent: with four files or more, a process forked after the imports
and the grammar (so it pays for neither) takes about half of the bytes,
on a machine of two cores or more. The files of one directory (the stage
dumps of one compile) stay in one process, where they share the index
expressions that each process builds once and remembers. Only where torch is not imported (the
CLI's own process): a fork of a process running torch's threads is not
safe. Every file is checked, and reported in the order given, whatever
the others hold; the exit status is the worst: 2 if a file could not be
read or parsed, else 1 if one was not canonical (--check), else 0."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ir_text import TircError, parse, print_ir

from .files import read_text, write_atomic

EXIT_OK, EXIT_MISMATCH, EXIT_ERROR = 0, 1, 2
# The fewest files worth a second process (forking costs a few milliseconds).
FORK_FROM = 4
# A module to parse before forking, so that both processes have the parser.
_EMPTY = 'tirc 0.1 stage=capture source="empty"\noptions {}\n\nreturn ()\n'


def fmt_command(args) -> int:
    results = _in_two_processes(args.files, args.check) if _forks(args.files) else None
    if results is None:
        results = [_format(path, args.check) for path in args.files]
    for _, message in results:
        if message:
            print(message, file=sys.stderr)
    return max((status for status, _ in results), default=EXIT_OK)


def _format(path: str, check: bool) -> tuple[int, str]:
    """(exit status, message) of one file, written in canonical form unless `check`."""
    try:
        text = read_text(path)
        # Unpositioned: the fast parse, and a file it fails on is parsed again for the error's position.
        canonical = print_ir(parse(text, path, positions=False))
        if canonical == text:
            return EXIT_OK, ""
        if check:
            return EXIT_MISMATCH, f"{path}: not in canonical form (run: tirc fmt {path})"
        write_atomic(Path(path), canonical)
        return EXIT_OK, f"reformatted {path}"
    except TircError as err:
        return EXIT_ERROR, err.located(path).format()


def _forks(files: list[str]) -> bool:
    return (
        len(files) >= FORK_FROM
        and (os.cpu_count() or 1) > 1
        and hasattr(os, "fork")
        and "torch" not in sys.modules
    )


def _in_two_processes(files: list[str], check: bool) -> list[tuple[int, str]] | None:
    """The results of every file, the child's share from a forked process;
    None when the fork fails (the caller formats them all itself)."""
    parse(_EMPTY, "<empty>", positions=False)  # the parser built once, before the fork
    mine, theirs = _shares(files)
    reader, writer = os.pipe()
    try:
        child = os.fork()
    except OSError:
        os.close(reader)
        os.close(writer)
        return None
    if child == 0:  # the child's share, then its results down the pipe
        os.close(reader)
        code = 0
        try:
            with os.fdopen(writer, "w") as out:
                json.dump([_format(files[k], check) for k in theirs], out)
        except BaseException:
            code = 1
        os._exit(code)
    os.close(writer)
    results = {k: _format(files[k], check) for k in mine}
    with os.fdopen(reader) as pipe:
        data = pipe.read()
    _, status = os.waitpid(child, 0)
    if status != 0 or not data:  # the child died: its files are formatted here
        results.update({k: _format(files[k], check) for k in theirs})
    else:
        results.update({k: tuple(result) for k, result in zip(theirs, json.loads(data))})
    return [results[k] for k in range(len(files))]


def _shares(files: list[str]) -> tuple[list[int], list[int]]:
    """The positions of the files this process formats, and the child's:
    whole directories (single files when all are in one), the largest
    first, each to the share with fewer bytes so far (or fewer files, at
    equal bytes). A file that cannot be read counts as empty (its error is
    reported by whichever process has it)."""
    groups: dict[str, list[int]] = {}
    for k, path in enumerate(files):
        groups.setdefault(os.path.dirname(os.path.abspath(path)), []).append(k)
    if len(groups) == 1:
        groups = {str(k): [k] for k in range(len(files))}
    sizes = {name: sum(_size(files[k]) for k in group) for name, group in groups.items()}
    shares: tuple[list[int], list[int]] = ([], [])
    loads = [0, 0]
    for name in sorted(groups, key=lambda n: (-sizes[n], n)):
        lighter = min((0, 1), key=lambda k: (loads[k], len(shares[k])))
        shares[lighter].extend(groups[name])
        loads[lighter] += sizes[name]
    return sorted(shares[0]), sorted(shares[1])


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
