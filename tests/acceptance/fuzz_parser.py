"""The parser fuzzer beyond CI's budget: N seeded mutants of real dumps (every
stage of a few programs) through parse and verify, as `tirc verify` runs them
(make fuzz-parser). Prints how many were accepted, rejected with a located
error, rejected without one, ended in a traceback or hung; exits 1 when any
did one of the last three.

    python tests/acceptance/fuzz_parser.py [N] [--seed S] [--save DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "ir_text")]

from parser_mutants import HANG_SECONDS, corpus, fuzz  # noqa: E402

KINDS = ("accepted", "rejected", "unlocated", "traceback", "hang")


def main(argv: list[str] | None = None) -> int:
    args = _arguments().parse_args(argv)
    save = Path(args.save) if args.save else None
    if save:
        save.mkdir(parents=True, exist_ok=True)

    def keep_failure(k, description, text, outcome):
        if save and outcome.kind not in ("accepted", "rejected"):
            (save / f"mutant-{args.seed}-{k}.tir").write_text(text)

    start = time.perf_counter()
    tally = fuzz(corpus(), args.count, args.seed, keep_failure)
    for line in tally.failures:
        print(line)
    counts = ", ".join(f"{tally.counts.get(kind, 0)} {kind}" for kind in KINDS)
    print(f"{args.count} mutants (seed {args.seed}, hang after {HANG_SECONDS} s): {counts}")
    print(f"{time.perf_counter() - start:.1f} s")
    return 1 if tally.failures else 0


def _arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", nargs="?", type=int, default=1000, help="how many mutants (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="the mutants' seed (default 0)")
    parser.add_argument("--save", metavar="DIR", help="write each failing mutant to DIR")
    return parser


if __name__ == "__main__":
    sys.exit(main())
