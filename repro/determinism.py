"""`--option check_determinism=true`: compile again under another hash seed
and fail on any difference (DESIGN.md: "determinism checked, not hoped for").

The first compile is the ordinary one; a `Recorder` around its dump writer
keeps every stage's text and output_code.py while passing on the files the
user asked for, so the user's dump directory is exactly what it would be
without the check. The second compile runs in a child process,
`python -m tirc compile ... --dump-after=all` into a temporary directory,
under another PYTHONHASHSEED, and the files are compared byte for byte.

The child sees the same options as the first compile, check_determinism
included (the options are printed into every header, so dropping it would
change every file); the environment variable TIRC_DETERMINISM_CHILD tells it
not to check again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ir_text import STAGES, TircError

CHILD_ENV = "TIRC_DETERMINISM_CHILD"
CAPTURE_DUMP = "01-capture.tir"
# The project root, so that the child runs this very tirc.
_ROOT = Path(__file__).resolve().parents[1]


class Recorder:
    """A dump writer (`wants`, `write`) that keeps every stage's file's bytes
    and passes on to `writer` (or nowhere) the files that it wants. A step's
    dump (`04-fusion.fuse.tir`) is passed on but not kept: the second run
    writes stages only."""

    def __init__(self, writer):
        self.writer = writer
        self.files: dict[str, bytes] = {}

    def wants(self, stage: str) -> bool:
        return stage in STAGES or (self.writer is not None and self.writer.wants(stage))

    def write(self, filename: str, data: str | bytes, stage: str, module=None) -> None:
        if stage in STAGES or stage == "codegen":
            self.files[filename] = data if isinstance(data, bytes) else data.encode()
        # output_code.py goes to every dump directory, as compile_module does.
        if self.writer is not None and (stage == "codegen" or self.writer.wants(stage)):
            self.writer.write(filename, data, stage, module)


def recording(options, writer):
    """The dump writer to compile with: `writer` itself, or a Recorder
    around it when the options ask for the check (and this is not the
    check's own second compile)."""
    if not options.check_determinism or os.environ.get(CHILD_ENV):
        return writer
    return Recorder(writer)


def compile_args(args) -> list[str]:
    """The `tirc compile` arguments (argparse namespace) that decide what is
    compiled, to run them again: not the dump flags, nor `--check`."""
    argv = [args.source]
    for flag, value in (("--entry", args.entry), ("--backend", args.backend), ("--device", args.device)):
        if value is not None:
            argv += [flag, value]
    for option in args.option:
        argv += ["--option", option]
    if args.stop_after is not None:
        argv += ["--stop-after", args.stop_after]
    if args.save_inputs:
        argv.append("--save-inputs")
    return argv


def check_rerun(dump, argv: list[str] | None) -> None:
    """When `dump` is a Recorder: compile again in a child process with
    `tirc compile ARGV` (None: the recorded capture dump, for programs that
    cannot be captured again, and the later stages are compared) under
    another PYTHONHASHSEED, and raise TircError at the first file and line
    that differ."""
    if not isinstance(dump, Recorder):
        return
    expected = dict(dump.files)
    seed = _other_seed()
    with tempfile.TemporaryDirectory(prefix="tirc-determinism-") as tmp:
        if argv is None:
            source = Path(tmp) / CAPTURE_DUMP
            source.write_bytes(expected.pop(CAPTURE_DUMP))
            argv = [str(source)]
        out = Path(tmp) / "dumps"
        _run_child(argv + ["--dump-after=all", "--dump-dir", str(out)], seed)
        # The dumps and the code only: manifest.json repeats their sha256s,
        # and its "timings" differ between any two runs (tirc/timings.py).
        produced = {
            path.name: path.read_bytes()
            for path in sorted(out.iterdir())
            if path.suffix == ".tir" or path.name == "output_code.py"
        }
    _compare(expected, produced, seed)


def _other_seed() -> int:
    own = os.environ.get("PYTHONHASHSEED", "")
    return (int(own) + 1) % 2**32 if own.isdigit() else 1


def _run_child(argv: list[str], seed: int) -> None:
    env = dict(os.environ, PYTHONHASHSEED=str(seed), **{CHILD_ENV: "1"})
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-m", "tirc", "compile", *argv],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise TircError(
            f"check_determinism: the second compile, under PYTHONHASHSEED={seed}, failed"
            f" (exit {proc.returncode}): {lines[-1] if lines else 'no message'}"
        )


def _compare(expected: dict[str, bytes], produced: dict[str, bytes], seed: int) -> None:
    other = f"a run under PYTHONHASHSEED={seed}"
    for name in sorted(set(expected) | set(produced)):
        if name not in produced:
            raise TircError(f"not deterministic: {other} wrote no {name}")
        if name not in expected:
            raise TircError(f"not deterministic: {other} wrote {name}, this run did not")
        if expected[name] != produced[name]:
            ours = expected[name].decode(errors="replace").splitlines()
            theirs = produced[name].decode(errors="replace").splitlines()
            k = next((k for k, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
            raise TircError(
                f"not deterministic: {name} differs from {other} at line {k + 1}:"
                f" {_line(ours, k)} here, {_line(theirs, k)} there"
            )


def _line(lines: list[str], k: int) -> str:
    if k >= len(lines):
        return "the end of the file"
    text = lines[k].strip()
    return repr(text if len(text) <= 120 else text[:117] + "...")
