"""Replay of every dump of every model in the corpora, from the headers' seeds alone.

    python tests/acceptance/replay_corpus.py [PROBLEM ...] [-j N] [--backend cpp|triton]
    make acceptance-replay

For each program (default: every .py under tests/acceptance/problems/ and
examples/) this runs `tirc compile FILE --dump-after=all
--dump-dir D --check`, then `tirc replay` on each D/NN-STAGE.tir, without
--save-inputs: replay seeds every input from the dump's header (its `range`
attribute where capture recorded one). A PROBLEM is a path to a .py file or a
directory.

Prints a table (program, the compile's exit code, each stage's replay exit
code, the first failure's last stderr line), then a summary. Exits 1 when
any replay of a correct compile (exit 0) exits non-zero, else 0.

Each worker process runs the CLI in process (`tirc.cli.main`), so torch is
imported once per worker rather than six times per program.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Before this script's directory, whose lowering.py would shadow the package.
sys.path[:0] = [str(ROOT)]
CORPORA = [ROOT / "tests/acceptance/problems", ROOT / "examples"]
STAGES = ("capture", "lower", "schedule", "fusion", "memplan")


@dataclass
class Replay:
    stage: str
    code: int
    message: str


@dataclass
class Outcome:
    program: str
    compile_code: int
    compile_message: str
    seconds: float = 0.0
    replays: list[Replay] = field(default_factory=list)

    def failures(self) -> list[Replay]:
        return [r for r in self.replays if r.code != 0]


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def run(argv: list[str]) -> tuple[int, str]:
    """(exit code, stderr) of `tirc ARGV`, in this process."""
    from tirc.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 2
    return code, err.getvalue()


def program_name(path: Path) -> str:
    try:
        return path.resolve().relative_to(ROOT).with_suffix("").as_posix()
    except ValueError:
        return path.stem


def run_one(path: Path, backend: str) -> Outcome:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tirc-replay-") as work:
        os.chdir(work)  # a crash reproducer of the compile goes here, not into the corpus
        dump_dir = Path(work) / "dumps"
        code, stderr = run(
            [
                "compile",
                str(path),
                "--dump-after=all",
                "--dump-dir",
                str(dump_dir),
                "--check",
                "--backend",
                backend,
            ]
        )
        outcome = Outcome(program_name(path), code, "" if code == 0 else last_line(stderr))
        for dump in sorted(dump_dir.glob("[0-9][0-9]-*.tir")):
            rc, err = run(["replay", str(dump)])
            outcome.replays.append(Replay(dump.stem.split("-", 1)[1], rc, "" if rc == 0 else last_line(err)))
        os.chdir(ROOT)
    outcome.seconds = time.perf_counter() - start
    return outcome


def find_programs(names: list[str]) -> list[Path]:
    roots = [Path(n) for n in names] or CORPORA
    paths = []
    for root in roots:
        if not root.exists():
            raise SystemExit(f"replay_corpus.py: no such file or directory: {root}")
        paths += sorted(root.rglob("*.py")) if root.is_dir() else [root]
    return list(dict.fromkeys(p.resolve() for p in paths))


def print_table(outcomes: list[Outcome]) -> None:
    width = max([len("program"), *(len(o.program) for o in outcomes)])
    print(f"{'program':<{width}}  compile  " + "  ".join(f"{s[:8]:>8}" for s in STAGES) + "  message")
    for o in outcomes:
        codes = {r.stage: str(r.code) for r in o.replays}
        cells = "  ".join(f"{codes.get(s, '-'):>8}" for s in STAGES)
        first = next(iter(o.failures()), None)
        message = o.compile_message or (f"{first.stage}: {first.message}" if first else "")
        print(f"{o.program:<{width}}  {o.compile_code:>7}  {cells}  {message}")


def print_summary(outcomes: list[Outcome], wall: float, jobs: int) -> int:
    correct = [o for o in outcomes if o.compile_code == 0]
    replays = [r for o in correct for r in o.replays]
    failed = [(o, r) for o in correct for r in o.failures()]
    print()
    print(f"programs: {len(outcomes)}, compiled correctly (exit 0): {len(correct)}")
    for o in outcomes:
        if o.compile_code != 0:
            print(f"  compile exit {o.compile_code}: {o.program}: {o.compile_message}")
    print(f"replays of correct compiles: {len(replays)}, exit 0: {len(replays) - len(failed)}")
    for o, r in failed:
        print(f"  {o.program} {r.stage}: exit {r.code}: {r.message}")
    verdict = "pass" if not failed else "FAIL"
    print(f"-j {jobs}, wall {wall:.1f} s: {verdict}")
    return 0 if not failed else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="*", help="program files or directories (default: the corpora)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="programs run in parallel (default 2)")
    parser.add_argument("--backend", default="cpp", choices=("cpp", "triton"), help="default cpp")
    args = parser.parse_args(argv)

    paths = find_programs(args.problems)
    start = time.perf_counter()
    outcomes: list[Outcome] = []
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_one, p, args.backend) for p in paths]
        for done, future in enumerate(as_completed(futures), 1):
            o = future.result()
            outcomes.append(o)
            codes = " ".join(str(r.code) for r in o.replays)
            print(
                f"[{done}/{len(paths)}] {o.program}: compile {o.compile_code}, replays {codes or '-'} "
                f"({o.seconds:.1f} s)",
                file=sys.stderr,
            )
    outcomes.sort(key=lambda o: o.program)
    print_table(outcomes)
    return print_summary(outcomes, time.perf_counter() - start, args.jobs)


if __name__ == "__main__":
    sys.exit(main())
