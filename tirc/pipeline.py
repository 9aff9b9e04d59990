"""The stage table and the driver: the pipeline is this list, read top to bottom.

Each stage is (name, steps, check of a re-fed dump), each step a named part
of the stage's pass (steps.py: faults, crash reports, --stop-after and
--dump-after may name it). The backend's own steps come from its record
(codegen's backend table): a step it has no part in passes the module on.
Dumping, stopping, re-parsing and timing (timings.py) hook around the
steps, never inside them. After every stage the module is printed (the
dump's text). The memplan stage's text is parsed back and verified, so
that codegen sees exactly what a memplan dump holds; the other stages'
results go on in memory, which the corpus tests show compiles to the same
bytes as their parsed texts, so that re-feeding a dump reproduces every
later file byte for byte. Parsing every stage back cost a quarter of a
cold compile (docs/design-notes.md, "Compile time"); the verify_roundtrip
option does it again, stage by stage, to find a pass whose result does
not read back as it is. (Text is read back without source positions,
which only error messages use: see read_back.)
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Callable

from ir_text import STAGES, Module, TircError, named_ops, parse, print_ir, verify
from codegen import Backend, backend_named, prebuild, split_reductions
from lowering import lower
from scheduler import (
    Target,
    check_facts,
    check_memplan,
    check_plan,
    derive_facts,
    drop_dead,
    factor_reductions,
    fuse,
    inline,
    plan_memory,
)

from .crash import Reproducers, inject_crash, run_pass
from .options import Options
from .steps import STEPS, stage_of
from .timings import Timings


class InternalError(RuntimeError):
    """A pass broke an IR rule: a compiler bug, not a problem in the input."""


@dataclass(frozen=True)
class Context:
    """What every pass may consult: the options, and the backend they name
    (its record: what it renders, what the scheduler may plan for it); and
    the compile's timings, which the driver records around the passes; and
    the compile's pool of kernel-build workers, if it has one
    (codegen/build_pool.py). No ambient state."""

    options: Options
    timings: Timings = field(default_factory=Timings, compare=False, repr=False)
    builds: object = field(default=None, compare=False, repr=False)

    @property
    def backend(self) -> Backend:
        return backend_named(self.options.backend)

    @property
    def target(self) -> Target:
        return self.backend.target


@dataclass(frozen=True)
class Step:
    """One named part of a stage's pass (steps.py says which may be stopped
    after and dumped)."""

    name: str
    run: Callable[[Module, Context], Module]


@dataclass(frozen=True)
class Stage:
    name: str
    steps: tuple[Step, ...]
    check: Callable[[Module, Context], None] | None


def _select_externs(module: Module, ctx: Context) -> Module:
    """Each matmul run by the library that times faster, where the backend
    chooses (the C++ backend: codegen/cpp_extern_select.py), so the dump records it."""
    choose = ctx.backend.select_externs
    return choose(module, ctx.options.device) if choose is not None else module


def _split_reductions(module: Module, ctx: Context) -> Module:
    """Each reduction over few long rows that the backend splits given its
    split factor (codegen/splits.py), so the dump records the split."""
    return split_reductions(module, ctx.options.backend)


def _tune_launches(module: Module, ctx: Context) -> Module:
    """Each kernel's launch config pinned by timing, where the backend times
    them (Triton on a GPU: codegen/triton_tune.py), so the dump records it."""
    tune = ctx.backend.tune_launches
    return tune(module, ctx.options.device, builds=ctx.builds) if tune is not None else module


def _check_plan(module: Module, ctx: Context) -> None:
    check_plan(module, ctx.options, ctx.target)


STAGE_TABLE = (
    Stage("capture", (), None),
    Stage("lower", (Step("lower.ops", lower), Step("lower.select-externs", _select_externs)), None),
    Stage(
        "schedule",
        (
            Step("schedule.factor-reductions", factor_reductions),
            Step("schedule.inline", inline),
            Step("schedule.dead-nodes", drop_dead),
            Step("schedule.facts", derive_facts),
        ),
        lambda m, ctx: check_facts(m),
    ),
    Stage(
        "fusion", (Step("fusion.fuse", fuse), Step("fusion.split-reductions", _split_reductions)), _check_plan
    ),
    Stage(
        "memplan",
        (Step("memplan.plan-memory", plan_memory), Step("memplan.tune-launches", _tune_launches)),
        lambda m, ctx: (_check_plan(m, ctx), check_memplan(m)),
    ),
)
assert tuple(s.name for s in STAGE_TABLE) == STAGES
assert all(tuple(step.name for step in s.steps) == tuple(n for n, _ in STEPS[s.name]) for s in STAGE_TABLE)


def dump_name(name: str) -> str:
    """The dump file of a stage (`04-fusion.tir`) or of a step (`04-fusion.fuse.tir`)."""
    stage = stage_of(name)
    return f"{STAGES.index(stage) + 1:02d}-{stage}{name[len(stage):]}.tir"


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
    an error of the dump, not of the run. A CUDA program may take CPU
    scalars (0-d tensors), as ATen ops do: attention's random-number state,
    which its backward reads (codegen moves one a kernel reads to the GPU)."""
    for inp in module.inputs:
        where = inp.device.split(":")[0]
        if where == "cpu" and device == "cuda" and not inp.value.type.shape:
            continue
        if where != device:
            line, col = inp.pos or (None, None)
            raise TircError(
                f'input %{inp.value.hint} is on "{inp.device}" but the options\' device is "{device}" '
                "(the generated code takes every input on that device)",
                line=line,
                col=col,
            )


def read_back(
    text: str,
    filename: str,
    ctx: Context,
    trusted_ops: frozenset[str] = frozenset(),
    stage: str | None = None,
) -> Module:
    """The checked module that a dump holding `text` (printed by tirc) reads
    as. Parsed without source positions, which costs less (measured:
    docs/design-notes.md, "Pipeline"); a text that does not parse is parsed
    again with them by `parse` itself, and so is one whose check fails, for
    the message. With `stage`, timed as `STAGE.parse` and `STAGE.verify`."""
    timed = ctx.timings.measure if stage is not None else lambda _: contextlib.nullcontext()
    with timed(f"{stage}.parse"):
        module = parse(text, filename, positions=False, trusted_ops=trusted_ops)
    try:
        with timed(f"{stage}.verify"):
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
    steps_wanted: frozenset[str] = frozenset(),
) -> Module:
    """Run the stages after `module.stage`, through `stop_after` (a stage or
    a whole step, steps.py; default: memplan).

    `on_stage(name, module, text)` sees each stage's result and its text,
    and the result of each step in `steps_wanted`; `on_pass(stage, module)`
    sees each stage's result before it is printed and read back, for work
    that may start early (prebuild_kernels); a pass that crashes leaves a
    reproducer in `repro` (crash.py): the module before its stage. Each
    stage is timed in ctx.timings, `on_stage` included, and so are its
    steps, its print and its read-back (`STAGE.print`, `.parse`, `.verify`).
    """
    last = STAGES.index(stage_of(stop_after)) if stop_after else len(STAGES) - 1
    for stage in STAGE_TABLE[module.stage_index + 1 : last + 1]:
        # A step of this stage to stop after (stopping after a stage runs all of it).
        upto = stop_after if stop_after in {step.name for step in stage.steps} else None
        with ctx.timings.measure(stage.name):
            module, text = run_pass(
                stage.name,
                module,
                ctx.options,
                repro,
                _run_stage,
                stage,
                module,
                ctx,
                on_pass,
                upto,
                steps_wanted,
                on_stage,
            )
            if on_stage is not None:
                on_stage(upto or stage.name, module, text)
    return module


def _run_stage(
    stage: Stage, module: Module, ctx: Context, on_pass=None, upto=None, wanted=frozenset(), on_step=None
):
    """One stage's steps (through step `upto`, when given), the result
    printed, parsed back and checked; `on_step` sees the wanted steps'
    results on the way."""
    for step in stage.steps:
        module = _run_step(step, module, ctx)
        if step.name == upto:
            break
        if step.name in wanted and step is not stage.steps[-1] and on_step is not None:
            on_step(step.name, module, print_ir(module))
    if on_pass is not None:
        on_pass(stage.name, module)
    with ctx.timings.measure(f"{stage.name}.print"):
        text = print_ir(module)
    if not reads_back(stage.name, ctx.options):
        return module, text
    name = upto or stage.name
    try:
        # The pass's own output: its ops came from a checked module or a traced program.
        return read_back(text, dump_name(name), ctx, named_ops(module), stage.name), text
    except TircError as err:
        raise InternalError(
            f"the {name} pass produced IR that does not verify: {err.located(dump_name(name))}"
        ) from None


def reads_back(stage: str, options: Options) -> bool:
    """Whether the pipeline goes on with the stage's result parsed back from
    its text and verified: the memplan stage's, which codegen reads, so that
    the generated code is the code of the memplan dump; every stage's with
    the verify_roundtrip option. The other stages' results go on as they
    are: the corpus tests (tests/tirc/test_stage_readback.py) show that they
    compile to the same bytes as their parsed texts."""
    return options.verify_roundtrip or stage == STAGES[-1]


def _run_step(step: Step, module: Module, ctx: Context) -> Module:
    """One step, with the crash `inject_fault=STEP:crash` asks for; a crash
    records the step it happened in, for the report (crash.py)."""
    try:
        inject_crash(ctx.options, step.name)
        with ctx.timings.measure(step.name):
            return step.run(module, ctx)
    except TircError:
        raise
    except Exception as err:
        if getattr(err, "tirc_step", None) is None:
            try:
                err.tirc_step = step.name
            except AttributeError:  # an exception type without a __dict__
                pass
        raise


def prebuild_kernels(ctx: Context):
    """An `on_pass` for a compile that goes on to codegen (None unless its
    backend builds its kernels, as the C++ backend does): once the fusion
    pass has fixed the kernels, g++ starts on them as the memplan stage will
    hand them to codegen (the memory plan decides which pointers may alias),
    so that it runs during the two read-backs and codegen rather than after
    them (measured: docs/design-notes.md, "C++ kernels"). The read-back
    modules print the same kernels, so codegen finds this build running.
    It is a guess and never fails the compile: a different source costs CPU
    time only, and a pass result that breaks it is reported by its read-back.
    Timed as `fusion.prebuild` (starting the build; codegen's load waits for it)."""

    if ctx.backend.prebuild is None:
        return None

    def on_pass(stage: str, module: Module) -> None:
        if stage != "fusion":
            return
        with ctx.timings.measure(f"{stage}.prebuild"):
            try:
                prebuild(plan_memory(module, ctx), ctx.options.backend)
            except Exception:  # noqa: BLE001 - a guess; see above
                pass

    return on_pass
