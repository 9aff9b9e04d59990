"""The `tirc` command line: compile, replay, fmt, verify, diff.

Exit codes: 0 success (or outputs match), 1 mismatch (or `fmt --check`
found a file to reformat, or `diff` a difference), 2 bad input or a compiler
error, reported as one `FILE:LINE:COL: error: ...` line without a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings

from ir_text import STAGES, VERSION, TircError, parse, printable
from repro import diff_modules

from . import default_triton_interpreter
from .files import read_text
from .steps import WHOLE_STEPS

# Only what `fmt`, `diff` and `--help` need is imported above: torch, and
# everything that imports it, is imported by the commands that run programs
# (its import alone takes seconds).

EXIT_OK, EXIT_MISMATCH, EXIT_ERROR = 0, 1, 2


class _Backends:
    """The names of codegen's backend table, for argparse's `choices`,
    read when a name is checked: importing codegen imports torch, which
    `tirc fmt` and `tirc --help` do without."""

    def __contains__(self, name) -> bool:
        from codegen import BACKENDS

        return name in BACKENDS

    def __iter__(self):
        from codegen import BACKENDS

        return iter(sorted(BACKENDS))


_BACKENDS = _Backends()
_BACKEND_HELP = "a backend of codegen's table: cpp (the default; C++/OpenMP) or triton"


class _Version(argparse.Action):
    """`--version`, its text read only when asked for (importlib.metadata's
    import costs what a quick command should not)."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(_version())
        parser.exit()


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"tirc: error: {message}", file=sys.stderr)
        sys.exit(EXIT_ERROR)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tirc", description="A debuggable compiler for PyTorch programs.")
    parser.add_argument("--version", action=_Version, nargs=0, help="print tirc's version and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    c = sub.add_parser("compile", help="compile a .py program, a .pt2 file or a .tir dump")
    c.add_argument(
        "source", help="a .py file (class Model + get_inputs), a .pt2 file (torch.export.save) or a .tir dump"
    )
    c.add_argument("--entry", help="compile this function of the .py file instead of Model")
    c.add_argument("--backend", choices=_BACKENDS, metavar="BACKEND", help=_BACKEND_HELP)
    c.add_argument("--device", choices=("cpu", "cuda"))
    c.add_argument(
        "--dump-after",
        metavar="STAGES",
        help=f"comma-separated stages ({','.join(STAGES)}), whole steps ({','.join(WHOLE_STEPS)}) or all",
    )
    c.add_argument("--dump-dir", metavar="DIR", help="where dumps go (default: tirc-dump)")
    c.add_argument(
        "--stop-after", metavar="STAGE", help="stop after this stage or whole step (see --dump-after)"
    )
    c.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the IR text of the last stage run (--stop-after's, else memplan's) to FILE, or - for stdout",
    )
    c.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    c.add_argument("--check", action="store_true", help="run and compare with eager PyTorch")
    c.add_argument(
        "--train",
        action="store_true",
        help="compile the training step (forward and backward graphs; dumps in DIR/forward and DIR/backward);"
        " the loss is the file's loss(outputs, inputs), else the sum of the outputs",
    )
    c.add_argument(
        "--save-inputs",
        action="store_true",
        help="save the input tensors as DIR/inputs/<sha256>.pt; the dumps name them and replay loads them",
    )
    _timings_flag(c)
    _verbose_flag(c)
    _profile_flags(c)
    _remote_cache_flag(c)
    c.add_argument(
        "--report",
        action="store_true",
        help="write DIR/report.html, an HTML report of the dumps (implies --dump-after=all when not given)",
    )
    r = sub.add_parser("replay", help="run a dump's remaining stages and check the result")
    r.add_argument("file")
    r.add_argument("--backend", choices=_BACKENDS, metavar="BACKEND", help=_BACKEND_HELP)
    r.add_argument("--device", choices=("cpu", "cuda"))
    r.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    _timings_flag(r)
    _verbose_flag(r)
    _profile_flags(r)
    _remote_cache_flag(r)

    f = sub.add_parser("fmt", help="rewrite dumps in canonical form")
    f.add_argument("--check", action="store_true", help="only report files that are not canonical")
    f.add_argument("files", nargs="+")

    v = sub.add_parser("verify", help="parse and verify dumps")
    v.add_argument("files", nargs="+")

    d = sub.add_parser("diff", help="structural diff of two dumps, ignoring value numbering")
    d.add_argument("first")
    d.add_argument("second")

    red = sub.add_parser("reduce", help="shrink a dump while its failure keeps the same signature")
    red.add_argument("file")
    red.add_argument(
        "--until",
        required=True,
        metavar="SPEC",
        help="crash[:REGEX] | mismatch | cmd:SHELL (the candidate's path is {} or the last argument)",
    )
    red.add_argument("-o", "--output", metavar="OUT.tir", help="where the reduced dump goes")
    red.add_argument("--backend", choices=_BACKENDS, metavar="BACKEND", help=_BACKEND_HELP)
    red.add_argument("--device", choices=("cpu", "cuda"))
    red.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")

    rep = sub.add_parser("report", help="write an HTML report of a compile's dumps (DIR/report.html)")
    rep.add_argument("directory", metavar="DIR", help="a dump directory (tirc compile --dump-after=all)")
    rep.add_argument("-o", "--output", metavar="FILE", help="the report's path (default: DIR/report.html)")
    rep.add_argument(
        "--source",
        action="append",
        default=[],
        metavar="FILE",
        help="a source file the dumps' loc(...) lines name, to embed (repeatable)",
    )
    return parser


def _timings_flag(parser) -> None:
    parser.add_argument(
        "--timings",
        action="store_true",
        help="print the seconds of each stage and step, and their share of the total, on stderr",
    )


def _profile_flags(parser) -> None:
    parser.add_argument(
        "--profile",
        action="store_true",
        help="run the compiled program under torch.profiler and print the time of each kernel and extern"
        " call against the measured total (with a dump dir: the manifest's profile)",
    )
    parser.add_argument(
        "--profile-trace",
        metavar="FILE",
        help="profile (as --profile) and write the profiled runs as a Chrome trace to FILE",
    )


def _verbose_flag(parser) -> None:
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print each stage on stderr as it finishes, with its seconds",
    )


def _remote_cache_flag(parser) -> None:
    parser.add_argument(
        "--remote-cache",
        metavar="URL",
        help="share caches through this Redis server (redis://HOST:PORT/DB; as TIRC_REMOTE_CACHE,"
        " with the secret in TIRC_REMOTE_CACHE_KEY)",
    )


@contextlib.contextmanager
def _remote_cache(url: str | None):
    """TIRC_REMOTE_CACHE set to `url` for the command (and the processes it
    starts), as it was afterwards."""
    if url is None:
        yield
        return
    from codegen import remote_cache

    variable = remote_cache.URL_VARIABLE
    remote_cache.check_url(url, "--remote-cache")
    saved = os.environ.get(variable)
    os.environ[variable] = url
    try:
        yield
    finally:
        if saved is None:
            del os.environ[variable]
        else:
            os.environ[variable] = saved


def _fmt(args) -> int:
    from .fmt_command import fmt_command

    return fmt_command(args)


def _verify(args) -> int:
    from .compiler import options_of
    from .pipeline import Context, check_module
    from .sources import load_dump, read_saved_input

    status = EXIT_OK
    for path in args.files:
        try:
            module = load_dump(path)
            check_module(module, Context(options_of(module)))
            for inp in module.inputs:
                if inp.sha256 is not None:
                    read_saved_input(path, inp)  # the file is there, and unchanged
        except TircError as err:
            print(err.located(path).format(), file=sys.stderr)
            status = EXIT_ERROR
            continue
        print(f"{path}: ok ({module.stage})", file=sys.stderr)
    return status


def _diff(args) -> int:
    first, second = (parse(read_text(path), path, positions=False) for path in (args.first, args.second))
    patch = diff_modules(first, second, args.first, args.second)
    if not patch:
        print(f"{args.first} and {args.second} are structurally equal", file=sys.stderr)
        return EXIT_OK
    sys.stdout.write(patch)
    return EXIT_MISMATCH


def _compile(args) -> int:
    default_triton_interpreter()
    from .commands import compile_command

    return compile_command(args)


def _replay(args) -> int:
    default_triton_interpreter()
    from .commands import replay_command

    return replay_command(args)


def _reduce(args) -> int:
    default_triton_interpreter()
    from .reducing import reduce_command

    return reduce_command(args)


def _report(args) -> int:
    from .report import write_report

    path = write_report(args.directory, sources=args.source, output=args.output)
    print(f"tirc: wrote {printable(str(path))}", file=sys.stderr)
    return EXIT_OK


def _version() -> str:
    """`tirc X.Y.Z (IR text V)`: the package's version, and the text format's
    version that dump headers carry and the parser checks."""
    import importlib.metadata

    try:
        package = importlib.metadata.version("tirc")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout, not installed
        package = "(not installed)"
    return f"tirc {package} (IR text {VERSION})"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # The Triton interpreter computes masked-off lanes too, and numpy warns
    # about their NaNs and overflows: noise that would split tirc's one-line
    # messages, never a finding about the program.
    warnings.filterwarnings("ignore", category=RuntimeWarning, module="triton.runtime.interpreter")
    handlers = {
        "compile": _compile,
        "replay": _replay,
        "fmt": _fmt,
        "verify": _verify,
        "diff": _diff,
        "reduce": _reduce,
        "report": _report,
    }
    try:
        with _remote_cache(getattr(args, "remote_cache", None)):
            return handlers[args.command](args)
    except TircError as err:
        print(err.format(), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("tirc: interrupted", file=sys.stderr)
        return EXIT_ERROR
    except Exception as err:  # a compiler bug: one line, the traceback on request
        if os.environ.get("TIRC_TRACEBACK"):
            raise
        text = str(err).strip().splitlines()
        stage = getattr(err, "tirc_pass", None)
        step = getattr(err, "tirc_step", None)
        where = f" in pass {stage}" if stage else ""
        where += f" (step {step})" if step else ""
        print(
            printable(
                f"tirc: internal error{where}: {type(err).__name__}: {text[0] if text else ''}"
                " (set TIRC_TRACEBACK=1 for the traceback)"
            ),
            file=sys.stderr,
        )
        from .crash import crash_report

        for line in crash_report(err):
            print(printable(line), file=sys.stderr)
        return EXIT_ERROR
