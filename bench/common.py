"""What the benchmarks share: medians of interleaved timings, geometric
means, markdown tables, and writing a section of bench/RESULTS.md."""

from __future__ import annotations

import functools
import itertools
import math
import re
import statistics
import time
from pathlib import Path


def medians(fns: dict, min_runs: int = 20, max_runs: int = 5000, budget_s: float = 1.5) -> dict:
    """The median time (seconds) of each callable, measured in interleaved
    rounds (one call of each per round) so that drift hits all alike; runs
    until each has `min_runs` and the time budget is spent, or `max_runs`.
    The budget, not `max_runs`, ends a fast workload's rounds: a 0.1 ms row
    sum measured over 0.1 s saw one moment of the neighbours' use of the
    shared L3 cache.

    The rounds go through every order of the callables (`ordering`): what
    ran just before a call (whose outputs fill the caches, whose threads are
    still spinning) moves its time by up to 5-10% on a 2-core machine, and
    rotating one order (as this did before) still hands each callable the
    same predecessor within every round."""
    for fn in fns.values():
        fn()  # warm-up: lazy compilation, allocator, caches
    times: dict = {name: [] for name in fns}
    names = list(fns)
    start = time.perf_counter()
    for k in range(max_runs):
        for name in ordering(names, k):
            t = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - t)
        if k + 1 >= min_runs and time.perf_counter() - start > budget_s:
            break
    return {name: statistics.median(ts) for name, ts in times.items()}


def ordering(items: list, k: int) -> list:
    """Round k's order: the permutations of `items` in turn, so that over
    len(items)! rounds each one runs in each position, and right after each
    other one, equally often."""
    orders = _permutations(tuple(items))
    return list(orders[k % len(orders)]) if items else []


@functools.lru_cache(maxsize=8)
def _permutations(items: tuple) -> tuple:
    """Computed once per set of callables, not in every timing round."""
    return tuple(itertools.permutations(items))


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table, columns padded so that it also reads as plain text."""
    widths = [max(len(str(r[k])) for r in [header] + rows) for k in range(len(header))]

    def line(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def write_section(path: Path, name: str, text: str) -> None:
    """Replace (or append) the part of `path` between `<!-- name -->` and
    `<!-- /name -->` markers, leaving the rest of the file as it is."""
    begin, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    block = f"{begin}\n{text.rstrip()}\n{end}"
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    new = pattern.sub(lambda _: block, old) if pattern.search(old) else old.rstrip() + "\n\n" + block + "\n"
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(new)
    tmp.replace(path)
