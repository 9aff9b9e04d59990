"""Delta debugging over the IR: shrink a module while `interesting(candidate,
output)` holds (the caller checks that the failure keeps its signature;
`output` is where the failing output now stands, None when no output is
tracked).

The passes, repeated until none makes progress:
1. outputs: keep only the failing output, drop input updates;
2. re-root: make the output an earlier value while the failure holds (a
   binary search over the output's ancestors, in program order), so what
   comes after the faulty op goes;
3. cut: replace what the output's producer reads by new inputs, all at once,
   then in halving chunks (ddmin), so what comes before goes;
4. forward: delete an item by reading one of its operands instead;
5. bodies: skip computing body ops of loop nodes (each becomes its first
   operand of the same dtype), in halving chunks; then one at a time for
   the second operand;
6. unfuse: split fused kernels into one kernel per node (fusion, memplan);
7. shapes (capture stage): each input size becomes 1, or 3, or half of
   itself, with result types inferred again.
Every candidate is a whole module of the input's stage, its derived sections
made anew (edits.py); the oracle parses and verifies it before running it.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Callable

from ir_text import Module

from . import edits
from .program import ancestors, items, op_count, returned


@dataclass
class Reduction:
    module: Module
    ops_before: int
    ops_after: int
    tests: int
    seconds: float
    # Stopped by Ctrl-C: `module` is the smallest failing one found so far.
    interrupted: bool = False


class _Search:
    def __init__(self, module: Module, interesting, output: int | None, log: Callable[[str], None]):
        self.best = module
        self.interesting = interesting
        self.output = output
        self.log = log
        self.tests = 0

    def attempt(self, what: str, build: Callable[..., Module | None], *args, smaller: bool = True) -> bool:
        """Build a candidate, `build(*args)`, and keep it when it still fails
        (and is smaller)."""
        before = self.best
        candidate = self.test(build, *args, against=before if smaller else None)
        if candidate is None:
            return False
        self.best = candidate
        self.log(f"reduce: [test {self.tests}] {what}: {_change(before, candidate)}")
        return True

    def test(self, build, *args, against: Module | None) -> Module | None:
        """The candidate `build(*args)` when it is smaller than `against`
        (None: any size) and still fails; None otherwise."""
        try:
            candidate = build(*args)
        except Exception:  # an edit the IR does not allow: not a candidate
            return None
        if candidate is None or (against is not None and size(candidate) >= size(against)):
            return None
        self.tests += 1
        return candidate if self.interesting(candidate, self.output) else None

    # ---- 1. outputs

    def outputs(self) -> bool:
        """Keep the tracked output alone (it becomes output 0); or, when no
        output is tracked, drop outputs in chunks. A tracked output that does
        not fail alone keeps every output where it is."""
        changed = self.attempt("drop input updates", edits.drop_updates, self.best)
        k = self.output
        if k is not None:
            if len(self.best.outputs) < 2:
                return changed
            self.output = 0
            if self.attempt(f"keep output {k} only", edits.keep_outputs, self.best, [k]):
                return True
            self.output = k
            return changed
        return (
            self.chunks(
                "drop outputs",
                lambda m: list(range(len(m.outputs))) if len(m.outputs) > 1 else [],
                _drop_outputs,
                keep_one=True,
            )
            or changed
        )

    # ---- 2. re-root

    def reroot(self) -> bool:
        changed = False
        for k in range(len(self.best.outputs)):
            while self._reroot_once(k):
                changed = True
        return changed

    def _reroot_once(self, k: int) -> bool:
        base = self.best
        candidates = ancestors(base, base.outputs[k])
        lo, hi, found = 0, len(candidates), None
        while lo < hi:
            mid = (lo + hi) // 2
            candidate = self.test(edits.reroot, base, k, candidates[mid], against=base)
            if candidate is not None:
                # Kept at once: an interrupted search keeps the latest that failed.
                self.best, found, hi = candidate, candidates[mid], mid
            else:
                lo = mid + 1
        if found is None:
            return False
        self.log(f"reduce: [test {self.tests}] output {k} from item {found}: {_change(base, self.best)}")
        return True

    # ---- 3. cut

    def cut(self) -> bool:
        def cuttable(m: Module) -> list[int]:
            roots = {id(v) for v in returned(m)}
            return [k for k, item in enumerate(items(m)) if not any(id(r) in roots for r in item.results)]

        return self.chunks("cut items", cuttable, edits.cut)

    # ---- 4. forward

    def forward(self) -> bool:
        changed = False
        k = len(items(self.best)) - 1
        while k >= 0:
            if k < len(items(self.best)) and self.attempt(f"forward item {k}", edits.forward, self.best, k):
                changed = True
            k -= 1
        return changed

    # ---- 5. bodies

    def bodies(self) -> bool:
        changed = False
        for n in range(len(self.best.nodes) if self.best.stage != "capture" else 0):
            changed |= self.chunks(
                f"skip body ops of node {n}",
                functools.partial(_body_ops, n),
                functools.partial(_bypass, n),
            )
            changed |= self._other_operands(n)
        return changed

    def _other_operands(self, n: int) -> bool:
        """Skip single body ops for their second operand instead of the first."""
        changed = False
        position = 0
        while position < len(ops := _body_ops(n, self.best)):
            k = ops[position]
            if self.attempt(
                f"skip body op {k} of node {n} (second operand)", edits.bypass_body_ops, self.best, n, [k], 1
            ):
                changed = True
            else:
                position += 1
        return changed

    # ---- 6. unfuse

    def unfuse(self) -> bool:
        changed = False
        for k in range(len(self.best.kernels or ())):
            changed |= self.attempt(f"unfuse kernel {k}", edits.unfuse, self.best, k, smaller=False)
        return changed

    # ---- 7. shapes

    def shapes(self) -> bool:
        changed = False
        for size in edits.input_sizes(self.best) if self.best.stage == "capture" else ():
            for new in dict.fromkeys(n for n in (1, 3, size // 2) if 0 < n < size):
                if self.attempt(f"size {size} -> {new}", edits.shrink, self.best, size, new):
                    changed = True
                    break
        return changed

    # ---- ddmin over units of the current module

    def chunks(self, what: str, units, build, keep_one: bool = False) -> bool:
        """Try `build(module, chunk)` for chunks of `units(module)`, halving the
        chunk size down to one (ddmin's complement step); an accepted chunk
        changes the module, whose units are listed again."""
        changed = False
        size = len(units(self.best))
        size = size if not keep_one else size - 1
        while size >= 1:
            start = 0
            while True:
                current = units(self.best)
                limit = len(current) - (1 if keep_one else 0)
                if start >= len(current) or limit < 1:
                    break
                chunk = current[start : start + min(size, limit)]
                if self.attempt(f"{what} {chunk[0]}..{chunk[-1]}", build, self.best, chunk):
                    changed = True
                else:
                    start += size
            size //= 2
        return changed


def size(module: Module) -> tuple[int, int]:
    """What the reducer makes smaller: ops first, then input elements."""
    return op_count(module), sum(inp.value.type.numel for inp in module.inputs)


def _change(before: Module, after: Module) -> str:
    (ops0, elements0), (ops1, elements1) = size(before), size(after)
    text = f"{ops0} -> {ops1} ops"
    return text if elements0 == elements1 else f"{text}, {elements0} -> {elements1} input elements"


def _drop_outputs(m: Module, chunk: list[int]) -> Module | None:
    return edits.keep_outputs(m, [k for k in range(len(m.outputs)) if k not in chunk])


def _body_ops(n: int, m: Module) -> list[int]:
    return edits.bypassable_ops(m.nodes[n]) if n < len(m.nodes) else []


def _bypass(n: int, m: Module, chunk: list[int]) -> Module | None:
    return edits.bypass_body_ops(m, n, chunk)


def reduce_module(
    module: Module,
    interesting: Callable[[Module, int | None], bool],
    failing_output: int | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> Reduction:
    """The smallest module the passes find for which `interesting` holds
    (it must hold for `module`). `failing_output`: the output whose mismatch
    is the failure, kept while other outputs go."""
    started = time.monotonic()
    search = _Search(module, interesting, failing_output, log)
    passes = (search.reroot, search.cut, search.forward, search.bodies, search.unfuse, search.shapes)
    interrupted = False
    try:
        search.outputs()
        while any([step() for step in passes]):
            pass
    except KeyboardInterrupt:  # no lost work: the best candidate so far is kept
        interrupted = True
    return Reduction(
        search.best,
        op_count(module),
        op_count(search.best),
        search.tests,
        time.monotonic() - started,
        interrupted,
    )
