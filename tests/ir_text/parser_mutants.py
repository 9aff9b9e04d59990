"""Mutants of real dumps for the parser fuzzer (test_parser_fuzz.py, and
tests/acceptance/fuzz_parser.py for longer runs): seeded edits of dump text
that `tirc verify` must answer with one located error, or accept, never with
a traceback or a hang."""

from __future__ import annotations

import random
import re
import signal
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from tir_helpers import chain4, stage_texts

from ir_text import TircError, parse
from tirc.compiler import options_of
from tirc.pipeline import Context, check_module

# A mutant taking longer than this to parse and verify counts as a hang.
HANG_SECONDS = 5.0
# What `tirc verify` prints for a rejected file: one line, located.
LOCATED = re.compile(r"^(?P<file>[^\n]+?):(?P<line>\d+):(?P<col>\d+): error: [^\n]+$")


# ---- the corpus: every stage of a few small programs that use all of the IR


def _shapes(x, y):
    """Concatenation, transposition and a reshape (floordiv, mod, min and max
    in the indices), a scan and a reduction."""
    a = torch.cat([x, y * 2], 1).t().reshape(-1, 4)[1:]
    return torch.cumsum(a, 0) + a.sum(1, keepdim=True)


def _gather(x, i):
    """Indirect loads, an extern call (sort) and an integer input's range."""
    return torch.softmax(x, -1)[i] + torch.sort(x, -1)[0][i]


def corpus() -> dict[str, str]:
    """`program/stage` -> dump text, every stage of three programs."""
    gen = torch.Generator().manual_seed(0)
    programs = {
        "chain": (chain4, [torch.randn(4, 5, generator=gen)]),
        "shapes": (_shapes, [torch.randn(3, 5, generator=gen), torch.randn(3, 7, generator=gen)]),
        "gather": (_gather, [torch.randn(6, 5, generator=gen), torch.tensor([2, 0, 5])]),
    }
    texts = {}
    for name, (fn, inputs) in programs.items():
        for stage, text in stage_texts(fn, inputs).items():
            texts[f"{name}/{stage}"] = text
    return texts


# ---- mutations: each takes (rng, text, corpus texts) and returns the new text

# Texts past this size grow no further: lark's positioned parse takes time
# linear in the text (tens of microseconds a token), which is not the point here.
MAX_GROWN = 50_000

# Numbers, names, values, strings, punctuation: what a token-level edit moves.
_TOKEN = re.compile(
    r'%[\w.]+|@[\w.]+|-?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|"(?:[^"\\\n]|\\.)*"|[A-Za-z_][\w.]*|\S'
)
_NUMBER = re.compile(r"(?<![\w%@.])-?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?")
_OPNAME = re.compile(r"\b(?:aten|loop|prims|torch)\.[\w.]+")
_WORD = re.compile(r"(?<![\w%@.\"])[A-Za-z_]\w*(?![\w.\"])")
_NAME = re.compile(r"[%@][\w.]+")
_INDEX = re.compile(r"(?<=load %)[\w.]+\[([^\]\n]*)\]|(?<=index )\[([^\]\n]*)\]")

HUGE_INTS = (
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "99999999999999999999",
    "1" * 5000,
    "-" + "9" * 400,
    "0" * 30 + "7",
)
ODD_FLOATS = ("1e999999", "-1e400", "1e-400", "0.0", "-0.0", "nan", "inf", "-inf", "1" * 400 + ".5")
OP_NAMES = (
    "aten.__class__.__init__",
    "aten.__dict__",
    "aten.add.__globals__",
    "builtins.eval",
    "os.system",
    "torch.ops.aten.add.Tensor",
    "aten.nonexistent.default",
    "aten.empty.memory_format",
    "aten.copy_.default",
    "loop.__init__",
    "loop.reduction",
    "aten.mul.__call__",
)
# What a file's text may hold (tirc reads files as strict UTF-8: no lone surrogates).
CONTROL = ("\x00", "\x07", "\x0b", "\x0c", "\x1b", "\r", "\x7f", "\x85", "\u2028", "\ufeff", "\t")


def _spans(pattern: re.Pattern, text: str) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(text)]


def _replace_span(rng, text: str, spans, new: str) -> str:
    if not spans:
        return text
    start, end = rng.choice(spans)
    return text[:start] + new + text[end:]


def flip_byte(rng, text, others):
    k = rng.randrange(len(text))
    return text[:k] + chr(rng.randrange(32, 127)) + text[k + 1 :]


def delete_token(rng, text, others):
    return _replace_span(rng, text, _spans(_TOKEN, text), "")


def duplicate_token(rng, text, others):
    spans = _spans(_TOKEN, text)
    if not spans:
        return text
    start, end = rng.choice(spans)
    return text[:end] + " " + text[start:end] + text[end:]


def swap_tokens(rng, text, others):
    spans = _spans(_TOKEN, text)
    if len(spans) < 2:
        return text
    (a, b), (c, d) = sorted(rng.sample(spans, 2))
    return text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:]


def splice_line(rng, text, others):
    """A line of another dump (often another stage's) in place of one of this one."""
    lines, donor = text.splitlines(keepends=True), rng.choice(others).splitlines(keepends=True)
    k = rng.randrange(len(lines))
    lines[k : k + rng.choice((0, 1))] = [rng.choice(donor)]
    return "".join(lines)


def huge_int(rng, text, others):
    return _replace_span(rng, text, _spans(_NUMBER, text), rng.choice(HUGE_INTS))


def odd_float(rng, text, others):
    return _replace_span(rng, text, _spans(_NUMBER, text), rng.choice(ODD_FLOATS))


def deep_index(rng, text, others):
    """An index expression wrapped in deep negations, parentheses or calls,
    or grown into a long sum or product: sizes about tirc's limits."""
    spans = [m.span(1) if m.group(1) is not None else m.span(2) for m in _INDEX.finditer(text)]
    if not spans or len(text) > MAX_GROWN:
        return deep_list(rng, text, others)
    start, end = rng.choice(spans)
    inner, n = text[start:end], rng.choice((10, 64, 65, 300, 2047, 2049, 5000))
    grown = rng.choice(
        (
            "- " * n + inner,
            "-(" * n + inner + ")" * n,
            "(" * n + inner + ")" * n,
            " + ".join(["i0"] * n) + " - " + inner,
            "floordiv(" * n + inner + ", 2)" * n,
            "min(i0, " * n + inner + ")" * n,
            "*".join([f"({inner})"] * min(n, 300)),
            f"mod({inner}, 0) + floordiv({n}, 0)",
        )
    )
    if len(grown) > MAX_GROWN:  # a product of 300 copies of a grown sum: megabytes
        return deep_list(rng, text, others)
    return text[:start] + grown + text[end:]


def deep_list(rng, text, others):
    """A nested list literal in place of an attribute's value."""
    n = rng.choice((5, 32, 33, 1000, 5000))
    spans = [m.span(1) for m in re.finditer(r"= ([^,}\n]+)[,}]", text)]
    return _replace_span(rng, text, spans, "[" * n + "1" + "]" * n)


def op_name(rng, text, others):
    return _replace_span(rng, text, _spans(_OPNAME, text), rng.choice(OP_NAMES))


def control_char(rng, text, others):
    k = rng.randrange(len(text) + 1)
    return text[:k] + rng.choice(CONTROL) + text[k:]


def truncate(rng, text, others):
    return text[: rng.randrange(len(text))]


def swap_values(rng, text, others):
    """One %value or @kernel name in place of another."""
    spans = _spans(_NAME, text)
    if not spans:
        return text
    start, end = rng.choice(spans)
    return _replace_span(rng, text, spans, text[start:end])


def tweak_number(rng, text, others):
    """A number a little off (an index constant, a size, a stride, a range, a group)."""
    spans = _spans(_NUMBER, text)
    if not spans:
        return text
    start, end = rng.choice(spans)
    number = text[start:end]
    if "." in number or "e" in number.lower():
        return text[:start] + rng.choice(("0.5", "-1.0", "3.0")) + text[end:]
    new = rng.choice((0, 1, 2, -1, 64, int(number) + 1, int(number) - 1, int(number) * 1000))
    return text[:start] + str(new) + text[end:]


def swap_word(rng, text, others):
    """One bare word in place of another: dtypes, stages, enums, loop variables, keywords."""
    spans = _spans(_WORD, text)
    if not spans:
        return text
    start, end = rng.choice(spans)
    return _replace_span(rng, text, spans, text[start:end])


MUTATIONS = (
    tweak_number,
    swap_word,
    flip_byte,
    delete_token,
    duplicate_token,
    swap_tokens,
    splice_line,
    huge_int,
    odd_float,
    deep_index,
    deep_list,
    op_name,
    control_char,
    truncate,
    swap_values,
)


def mutant(rng: random.Random, texts: list[str]) -> tuple[str, str]:
    """(description, text): one to three mutations of one corpus text."""
    text = rng.choice(texts)
    applied = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        mutation = rng.choice(MUTATIONS)
        text = mutation(rng, text, texts) if text else text
        applied.append(mutation.__name__)
    return "+".join(applied), text


# ---- running one mutant as `tirc verify` does


class Hang(BaseException):
    """Raised by the alarm (a BaseException: no `except Exception` in the
    code under test may swallow it)."""


@contextmanager
def time_limit(seconds: float):
    def alarm(signum, frame):
        raise Hang()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Outcome:
    kind: str  # accepted, rejected, unlocated, traceback, hang
    detail: str = ""


def verify_text(text: str, filename: str = "mutant.tir") -> None:
    """What `tirc verify` checks of a file, in process (its saved inputs aside)."""
    module = parse(text, filename)
    check_module(module, Context(options_of(module)))


def run_mutant(text: str, filename: str = "mutant.tir", seconds: float = HANG_SECONDS) -> Outcome:
    try:
        with time_limit(seconds):
            verify_text(text, filename)
    except Hang:
        return Outcome("hang", f"more than {seconds} s")
    except TircError as err:
        message = err.located(filename).format()
        if LOCATED.match(message) and message.startswith(f"{filename}:"):
            return Outcome("rejected", message)
        return Outcome("unlocated", message)
    except RecursionError as err:  # before Exception: it is one
        return Outcome("traceback", f"RecursionError: {err}")
    except Exception as err:
        return Outcome("traceback", f"{type(err).__name__}: {err}")
    return Outcome("accepted")


@dataclass
class Tally:
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)  # tracebacks, hangs and unlocated errors

    def add(self, index: int, description: str, outcome: Outcome) -> None:
        self.counts[outcome.kind] = self.counts.get(outcome.kind, 0) + 1
        if outcome.kind not in ("accepted", "rejected"):
            self.failures.append(f"mutant {index} ({description}): {outcome.kind}: {outcome.detail[:300]}")


def fuzz(texts: dict[str, str], count: int, seed: int, on_mutant=None) -> Tally:
    """Run `count` mutants of `texts`, drawn from `seed`."""
    rng, tally, bodies = random.Random(seed), Tally(), list(texts.values())
    for name, text in texts.items():
        # Unmutated, every text verifies; this also warms the parser and the
        # checks up (lark's tables, torch's fake tensors), outside the time limit.
        verify_text(text, name)
    for k in range(count):
        description, text = mutant(rng, bodies)
        outcome = run_mutant(text)
        tally.add(k, description, outcome)
        if on_mutant is not None:
            on_mutant(k, description, text, outcome)
    return tally
