"""The stage table and the driver: the pipeline is this list, read top to bottom.

Each stage is (name, pass, check of a re-fed dump). Dumping, stopping and
re-parsing hook around the passes, never inside them. After every stage the
module is printed and parsed back, so the rest of the pipeline sees exactly
what a dump of that stage holds: re-feeding a dump reproduces every later
file byte for byte by construction. (It is read back without source
positions, which only error messages use: see read_back.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ir_text import STAGES, Module, TircError, named_ops, parse, print_ir, verify
from codegen import prebuild, select_externs, split_reductions, split_rule, tune_launches
from lowering import lower
from scheduler import check_facts, check_memplan, check_plan, fuse, plan_memory, schedule

from .crash import Reproducers, run_pass
from .options import Options


class InternalError(RuntimeError):
    """A pass broke an IR rule: a compiler bug, not a problem in the input."""


@dataclass(frozen=True)
class Context:
    """What every pass may consult: the options. No ambient state."""

    options: Options


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable[[Module, Context], Module] | None
    check: Callable[[Module, Context], None] | None


def _lower(module: Module, ctx: Context) -> Module:
    """The lowered program, each linear-shaped CPU matmul run by the library
    that times faster (codegen/extern_select.py), so the dump records it."""
    return select_externs(lower(module, ctx), ctx.options.backend, ctx.options.device)


def _fuse(module: Module, ctx: Context) -> Module:
    """The fusion plan, each reduction over few long rows that the backend
    splits kept one pass and given its split factor (codegen/splits.py), so
    the dump records the split."""
    backend = ctx.options.backend
    return split_reductions(fuse(module, ctx, split_rule(backend)), backend)


def _check_plan(module: Module, ctx: Context) -> None:
    check_plan(module, ctx.options, split_rule(ctx.options.backend))


def _plan_memory(module: Module, ctx: Context) -> Module:
    """The memory plan, with each Triton kernel's launch config pinned by
    timing on the GPU (codegen/triton_tune.py), so the dump records it."""
    return tune_launches(plan_memory(module, ctx), ctx.options.backend, ctx.options.device)


STAGE_TABLE = (
    Stage("capture", None, None),
    Stage("lower", _lower, None),
    Stage("schedule", schedule, lambda m, ctx: check_facts(m)),
    Stage("fusion", _fuse, _check_plan),
    Stage("memplan", _plan_memory, lambda m, ctx: (_check_plan(m, ctx), check_memplan(m))),
)
assert tuple(s.name for s in STAGE_TABLE) == STAGES


def dump_name(stage: str) -> str:
    return f"{STAGES.index(stage) + 1:02d}-{stage}.tir"


def check_module(module: Module, ctx: Context) -> Module:
    """Verify a module read from a dump, including the derived facts of its stage."""
    verify(module)
    _check_devices(module, ctx.options.device)
    check = STAGE_TABLE[module.stage_index].check
    if check is not None:
        check(module, ctx)
    return module


def _check_devices(module: Module, device: str) -> None:
    """The generated code takes every input on the options' device: an input
    declared elsewhere (an edited header, `--device cuda` on a CPU dump) is
    an error of the dump, not of the run."""
    for inp in module.inputs:
        if inp.device.split(":")[0] != device:
            line, col = inp.pos or (None, None)
            raise TircError(
                f'input %{inp.value.hint} is on "{inp.device}" but the options\' device is "{device}" '
                "(the generated code takes every input on that device)",
                line=line,
                col=col,
            )


def read_back(text: str, filename: str, ctx: Context, trusted_ops: frozenset[str] = frozenset()) -> Module:
    """The checked module that a dump holding `text` (printed by tirc) reads
    as. Parsed without source positions, which costs half as much (a text
    that does not parse is parsed again with them by `parse` itself); only
    when a check fails is it parsed again with them, for the message."""
    module = parse(text, filename, positions=False, trusted_ops=trusted_ops)
    try:
        return check_module(module, ctx)
    except TircError:
        return check_module(parse(text, filename, trusted_ops=trusted_ops), ctx)


def run_stages(
    module: Module,
    ctx: Context,
    stop_after: str | None = None,
    on_stage=None,
    repro: Reproducers | None = None,
    on_pass=None,
) -> Module:
    """Run the stages after `module.stage`, through `stop_after` (default: memplan).

    `on_stage(stage, module, text)` sees each stage's result and its text;
    `on_pass(stage, module)` sees each pass's result before it is printed
    and read back, for work that may start early (prebuild_kernels); a
    pass that crashes leaves a reproducer in `repro` (crash.py).
    """
    last = STAGES.index(stop_after) if stop_after else len(STAGES) - 1
    for stage in STAGE_TABLE[module.stage_index + 1 : last + 1]:
        module, text = run_pass(
            stage.name, module, ctx.options, repro, _run_stage, stage, module, ctx, on_pass
        )
        if on_stage is not None:
            on_stage(stage.name, module, text)
    return module


def _run_stage(stage: Stage, module: Module, ctx: Context, on_pass=None) -> tuple[Module, str]:
    """One pass, its result printed, parsed back and checked."""
    result = stage.run(module, ctx)
    if on_pass is not None:
        on_pass(stage.name, result)
    text = print_ir(result)
    try:
        # The pass's own output: its ops came from a checked module or a traced program.
        return read_back(text, dump_name(stage.name), ctx, named_ops(result)), text
    except TircError as err:
        raise InternalError(
            f"the {stage.name} pass produced IR that does not verify: {err.located(dump_name(stage.name))}"
        ) from None


def prebuild_kernels(ctx: Context):
    """An `on_pass` for a compile that goes on to codegen (None unless it
    builds C++): once the fusion
    pass has fixed the kernels, g++ starts on them as the memplan stage will
    hand them to codegen (the memory plan decides which pointers may alias),
    so that it runs during the two read-backs and codegen rather than after
    them: 0.1 s of the transformer block's 0.7 s cold compile. The read-back
    modules print the same kernels, so codegen finds this build running.
    It is a guess and never fails the compile: a different source costs CPU
    time only, and a pass result that breaks it is reported by its read-back."""

    if ctx.options.backend != "cpp":
        return None

    def on_pass(stage: str, module: Module) -> None:
        if stage != "fusion":
            return
        try:
            prebuild(_plan_memory(module, ctx))
        except Exception:  # noqa: BLE001 - a guess; see above
            pass

    return on_pass
