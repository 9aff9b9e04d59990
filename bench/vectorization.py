"""Which `#pragma omp simd` loops of generated C++ g++ actually vectorized,
read from its own report (`-fopt-info-vec-optimized`), with the flags tirc
compiles with, and checked against the code it emitted: g++ 12 reports a
loop vectorized that it then emits scalar in some cases (a bool converted
to float in the loop: RetinaNet's focal loss), so a kernel with `omp simd`
loops whose assembly has no vector code counts as missed too. Used by
`bench/cpu.py`."""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from codegen.cpp_build import command, compiler

# Vector code: a 256- or 512-bit register, or packed arithmetic (SSE's
# xmm forms; scalar code uses `addss`/`mulsd`, and moves and xors of xmm
# registers appear in it too), or a loop replaced by memcpy/memset.
_PACKED = re.compile(
    r"%[yz]mm|\s(v?(add|sub|mul|div|max|min|sqrt)p[sdh]|vfn?m(add|sub)\w*p[sdh]|v?p(add|sub|mul)\w+)\s|mem(cpy|set)"
)
_FUNCTION = re.compile(r"^([A-Za-z_][\w.]*):$")
_KERNEL = re.compile(r"k\d+")
# A function's use of another: a call, a tail jump, or its address taken
# (OpenMP's outlined bodies are passed to GOMP_parallel).
_CALL = re.compile(r"\s(?:call|jmp)\s+([A-Za-z_][\w.]*)|\slea[lq]?\s+([A-Za-z_][\w.]*)\(%rip\)")

# A loop counts as vectorized when g++ vectorized it, or replaced it whole
# by a library call (a copy or a fill becomes memcpy/memset).
_VECTORIZED = re.compile(
    r"^[^:]+:(\d+):\d+: optimized: (loop vectorized|Loop \d+ distributed: split to 0 loops and \d+ library calls)"
)


@dataclass(frozen=True)
class Report:
    loops: int  # `omp simd` loops in the source
    vectorized: int
    missed: tuple[str, ...]  # "kernel: first line of the loop" for each one not vectorized


def cpp_source(code: str) -> str:
    """The C++ text of a generated output_code.py."""
    start = code.index('CPP_SOURCE = r"""') + len('CPP_SOURCE = r"""')
    return code[start : code.index('"""', start)]


def _simd_loops(lines: list[str]) -> list[tuple[int, int, str]]:
    """(first line, last line, kernel) of each loop under `#pragma omp simd`, 1-based."""
    loops, kernel = [], "?"
    for k, line in enumerate(lines):
        if line.startswith("// k"):
            kernel = line[3:].split(":")[0].strip()
        if "#pragma omp simd" not in line:
            continue
        depth, end = 0, k + 1
        for end in range(k + 1, len(lines)):
            depth += lines[end].count("{") - lines[end].count("}")
            if depth <= 0:
                break
        loops.append((k + 1, end + 1, kernel))
    return loops


def report(source: str) -> Report:
    lines = source.splitlines()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernels.cpp"
        path.write_text(source)
        # No identical-code folding: g++ folds a kernel's pieces into an
        # identical kernel's before vectorizing, and reports only those.
        report_flags = ["-fopt-info-vec-optimized", "-fopt-info-loop-optimized", "-fno-ipa-icf"]
        args = [*report_flags, str(path), "-o", str(Path(tmp) / "k.so")]
        result = subprocess.run(command(compiler(), args), capture_output=True, text=True)
        asm = Path(tmp) / "k.s"
        subprocess.run(
            command(compiler(), ["-S", "-fno-ipa-icf", str(path), "-o", str(asm)]),
            capture_output=True,
            check=True,
        )
        packed = _packed_kernels(asm.read_text())
    hits = [int(m.group(1)) for m in map(_VECTORIZED.match, result.stderr.splitlines()) if m]
    loops = _simd_loops(lines)
    missed = tuple(
        f"{kernel}: {lines[first].strip()}"
        + ("" if _root(kernel) in packed else " (no vector code in its assembly)")
        for first, last, kernel in loops
        if not any(first <= hit <= last for hit in hits) or _root(kernel) not in packed
    )
    return Report(len(loops), len(loops) - len(missed), missed)


def _root(kernel: str) -> str:
    """The kernel a function belongs to: `k5` for its OpenMP bodies
    (`k5._omp_fn.0`), loop nests and pieces (`k5_4_p0`), which g++ may
    inline into it."""
    match = _KERNEL.match(kernel)
    return match.group(0) if match else kernel


def _packed_kernels(asm: str) -> set[str]:
    """The kernels whose assembly holds vector code, their own or in a
    function they call (g++ folds identical functions into one: the pieces
    of two identical kernels share one body)."""
    own, calls, function = set(), {}, None
    for line in asm.splitlines():
        label = _FUNCTION.match(line)
        if label:
            function = label.group(1)
            calls.setdefault(function, set())
        elif function and _PACKED.search(line + " "):
            own.add(function)
        elif function and (call := _CALL.search(line)):
            # g++'s `k13.localalias` is k13 itself
            calls[function].add((call.group(1) or call.group(2)).removesuffix(".localalias"))
    vector = set(own)
    changed = True
    while changed:
        changed = False
        for name, callees in calls.items():
            if name not in vector and callees & vector:
                vector.add(name)
                changed = True
    return {_root(name) for name in vector}
