"""`tirc reduce FILE.tir --until SPEC [-o OUT.tir]`: the oracle that runs a
candidate dump as `tirc replay` would, the failure's signature, and the
command around repro.reduce_module (which only edits IR).

A signature is what must stay the same while the dump shrinks:
- `mismatch`: the compiled code differs from the reference in the same
  output (the reducer keeps that output first, so it is output 0 after);
- `crash[:REGEX]`: an exception of the same type whose `TYPE: message`
  line, as tirc prints a crash, matches REGEX (default: the first message
  with its numbers and value names made wildcards);
- `cmd:SHELL`: SHELL exits 0 on the candidate (its path replaces `{}`, or
  is appended), as C-Reduce's interestingness test.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ir_text import Module, TircError, first_line, parse, print_ir
from repro import op_count, reduce_module

from .commands import dump_mismatch, header_inputs
from .compiler import compile_module, options_of
from .dumps import write_atomic
from .pipeline import Context, check_module
from .sources import load_dump, saved_input_file


@dataclass(frozen=True)
class Outcome:
    """How a candidate ran: kind is ok, mismatch, crash, invalid, or
    interesting (the `cmd:` test exited 0)."""

    kind: str
    output: int | None = None
    error_type: str = ""
    message: str = ""

    @property
    def crash_line(self) -> str:
        """A crash as tirc prints it, what `crash:REGEX` is matched against."""
        return f"{self.error_type}: {self.message}"

    def describe(self) -> str:
        if self.kind == "mismatch":
            return f"mismatch in output {self.output}: {self.message}"
        if self.kind == "crash":
            return f"crash: {self.crash_line}"
        if self.kind == "invalid":
            return f"an invalid dump: {self.message}"
        if self.kind == "interesting":
            return "the command exits 0"
        return "no failure: outputs match"


@dataclass(frozen=True)
class Until:
    kind: str  # mismatch, crash or cmd
    pattern: str | None = None  # crash: the message regex; cmd: the shell command

    @classmethod
    def parse(cls, spec: str) -> "Until":
        kind, sep, rest = spec.partition(":")
        if kind == "mismatch" and not sep:
            return cls("mismatch")
        if kind == "crash":
            if rest:
                try:
                    re.compile(rest)
                except re.error as err:
                    raise TircError(f"--until crash:REGEX: bad regular expression: {err}") from None
            return cls("crash", rest or None)
        if kind == "cmd" and rest.strip():
            return cls("cmd", rest)
        raise TircError(f"--until takes crash[:REGEX], mismatch or cmd:SHELL, got '{spec}'")


def message_pattern(message: str) -> str:
    """A regex for messages like `message` up to numbers and value names."""
    pattern = ""
    for piece in re.split(r"(%[\w.]+|\d+(?:\.\d+)?(?:e[-+]?\d+)?)", message):
        if not piece:
            continue
        if piece.startswith("%"):
            pattern += r"%[\w.]+"
        elif piece[0].isdigit():
            pattern += r"[-+.\w]+"
        else:
            pattern += re.escape(piece)
    return pattern


class Oracle:
    """Runs candidates of the dump at `path` as `tirc replay` would."""

    def __init__(self, path: str, until: Until):
        self.path = path
        self.until = until

    def run(self, module: Module) -> Outcome:
        """How a candidate runs; one that tirc refuses (a TircError, as from
        an edit the verifier rejects) is invalid."""
        try:
            return self.outcome(module)
        except TircError as err:
            return Outcome("invalid", message=err.message)

    def outcome(self, module: Module) -> Outcome:
        """How `module` runs; an error of the input (TircError) is raised, not
        counted as a crash: for the dump itself, it is the error `tirc
        replay` reports."""
        if self.until.kind == "cmd":
            return self._command(module)
        candidate = parse(print_ir(module), "<candidate>")
        options = options_of(candidate)
        check_module(candidate, Context(options))
        inputs = header_inputs(candidate, self.path)
        try:
            call = compile_module(candidate, options).load().call
            mismatch = dump_mismatch(candidate, call, inputs)
        except TircError:
            raise
        except Exception as err:
            return Outcome("crash", error_type=type(err).__name__, message=first_line(err))
        if mismatch is None:
            return Outcome("ok")
        return Outcome("mismatch", mismatch.output, message=mismatch.message)

    def _command(self, module: Module) -> Outcome:
        with tempfile.TemporaryDirectory(prefix="tirc-reduce-") as tmp:
            candidate = Path(tmp) / "candidate.tir"
            write_reduced(candidate, module, self.path)
            command = self.until.pattern
            quoted = shlex.quote(str(candidate))
            command = command.replace("{}", quoted) if "{}" in command else f"{command} {quoted}"
            proc = subprocess.run(command, shell=True, capture_output=True, text=True)
        return Outcome("interesting" if proc.returncode == 0 else "ok")


@dataclass(frozen=True)
class Signature:
    kind: str
    output: int | None = None
    error_type: str = ""
    pattern: str = ""

    def at(self, output: int | None) -> "Signature":
        """The signature with the failing output where the reducer has moved it."""
        return self if output is None else dataclasses.replace(self, output=output)

    def matches(self, outcome: Outcome) -> bool:
        if self.kind == "mismatch":
            return outcome.kind == "mismatch" and outcome.output == self.output
        if self.kind == "cmd":
            return outcome.kind == "interesting"
        return (
            outcome.kind == "crash"
            and outcome.error_type == self.error_type
            and re.search(self.pattern, outcome.crash_line) is not None
        )


def signature_of(until: Until, first: Outcome) -> Signature:
    """The signature the reduction keeps, from the input's own failure."""
    wanted = {"mismatch": "mismatch", "crash": "crash", "cmd": "interesting"}[until.kind]
    if first.kind != wanted or (
        until.kind == "crash" and until.pattern and not re.search(until.pattern, first.crash_line)
    ):
        what = {"mismatch": "a mismatch", "crash": "a crash", "cmd": "the command to exit 0"}[until.kind]
        if until.kind == "crash" and until.pattern:
            what = f"a crash whose 'TYPE: message' matches /{until.pattern}/"
        raise TircError(f"--until {until.kind}: expected {what}, but the dump gives {first.describe()}")
    if until.kind == "mismatch":
        return Signature("mismatch", first.output)
    if until.kind == "cmd":
        return Signature("cmd")
    return Signature("crash", None, first.error_type, until.pattern or message_pattern(first.message))


def write_reduced(path: Path, module: Module, source_path: str) -> None:
    """Write a dump atomically, with the saved inputs it names beside it."""
    for inp in module.inputs:
        if inp.sha256 is not None:
            target = saved_input_file(path, inp.sha256)
            source = saved_input_file(source_path, inp.sha256)
            if target.resolve() != source.resolve():
                write_atomic(target, source.read_bytes())
    write_atomic(path, print_ir(module))


def default_output(path: str) -> Path:
    p = Path(path)
    return p.with_name(f"{p.stem}.reduced.tir")


def reduce_command(args) -> int:
    try:
        return _reduce(args)
    except TircError as err:
        raise err.located(args.file) from None


def _reduce(args) -> int:
    until = Until.parse(args.until)
    module = load_dump(args.file)
    options = options_of(module, args.option, backend=args.backend, device=args.device)
    check_module(module, Context(options))
    module.options = options.to_pairs()
    output = Path(args.output) if args.output else default_output(args.file)
    if output.resolve() == Path(args.file).resolve():
        raise TircError("-o names the input file; the reduced dump must go elsewhere")
    if until.kind == "cmd" and shutil.which("sh") is None:
        raise TircError("--until cmd: needs a shell (sh)")
    oracle = Oracle(args.file, until)
    first = oracle.outcome(module)
    signature = signature_of(until, first)
    log = lambda line: print(line, file=sys.stderr)  # noqa: E731
    log(f"reduce: {args.file}: {op_count(module)} ops, {first.describe()}")
    result = reduce_module(
        module,
        lambda m, output: signature.at(output).matches(oracle.run(m)),
        first.output if signature.kind == "mismatch" and first.output >= 0 else None,
        log,
    )
    text = print_ir(result.module)
    if print_ir(parse(text, str(output))) != text:  # the printer's own guarantee, checked
        raise RuntimeError("the reduced dump does not round-trip")
    write_reduced(output, result.module, args.file)
    stopped = "interrupted; so far " if result.interrupted else ""
    print(
        f"tirc: {stopped}reduced {result.ops_before} -> {result.ops_after} ops ({result.tests} tests,"
        f" {result.seconds:.1f} s); wrote {output}; replay it with: tirc replay {output}",
        file=sys.stderr,
    )
    return 2 if result.interrupted else 0
