"""Compiling: a program or a dump through the remaining stages to generated code."""

from __future__ import annotations

import torch

from codegen import build_kernels, generate, load_output_code, tuning_target
from ir_text import STAGES, Module, TircError, check_text_ops, named_ops, parse, print_ir
from lowering import capture
from repro import check_rerun

from . import code_cache
from .crash import Reproducers, run_pass
from .dumps import DumpWriter
from .options import Options
from .pipeline import Context, dump_name, prebuild_kernels, read_back, reads_back, run_stages
from .steps import STEP_NAMES, WHOLE_STEPS, stage_of
from .timings import Timings


class Compiled:
    """The last stage reached and output_code.py (None when the pipeline
    stopped early); from the code cache, the module is parsed when first
    used, and `rebuild(reason)` compiles it again when that text is bad.
    `timings` are the compile's (timings.py), loading the code included."""

    def __init__(
        self,
        module: Module | str,
        code: str | None,
        rebuild=None,
        trusted_ops=frozenset(),
        timings: Timings | None = None,
        build_kernels=None,
    ):
        self._module = module
        self._build_kernels = build_kernels
        self.code = code
        self._rebuild = rebuild
        self._trusted_ops = trusted_ops
        self.timings = timings if timings is not None else Timings()
        self._loaded = None

    @property
    def module(self) -> Module:
        if isinstance(self._module, str):
            try:
                with self.timings.measure("cache"), self.timings.measure("cache.parse"):
                    self._module = parse(self._module, "memplan", trusted_ops=self._trusted_ops)
            except TircError as err:
                fresh = self._rebuild(f"its memplan text does not parse: {err.format().splitlines()[0]}")
                self._module, self.code, self._loaded = fresh.module, fresh.code, None
        return self._module

    def load(self):
        """The generated module (with `call(args)`), loaded once: timed as
        `build`, since loading builds the kernels (the C++ library, or waits
        for the build that fusion.prebuild started), or, with a pool of build
        workers, builds the Triton kernels there first (`build.kernels`)."""
        if self.code is None:
            raise TircError(f"compilation stopped after {self.module.stage}; there is no code to run")
        if self._loaded is None:
            with self.timings.measure("build"):
                if self._build_kernels is not None:
                    with self.timings.measure("build.kernels"):
                        self._build_kernels()
                    self._build_kernels = None
                self._loaded = load_output_code(self.code)
        return self._loaded


def parse_dump_after(spec) -> set[str]:
    """The stages and whole steps (steps.py) named by `--dump-after`."""
    if spec is None:
        return set()
    names = [spec] if isinstance(spec, str) else list(spec)
    wanted = set()
    for item in names:
        for name in str(item).split(","):
            name = name.strip()
            if name == "all":
                wanted.update(STAGES)
            elif name:
                wanted.add(_stage_or_step(name, "--dump-after", " or all"))
    return wanted


def check_stop_after(stop_after: str | None) -> None:
    if stop_after is not None:
        _stage_or_step(stop_after, "--stop-after")


def _stage_or_step(name: str, flag: str, more: str = "") -> str:
    """`name` when it is a stage or a whole step; a step whose result is
    part of its stage's work (steps.py) is no dump, and is refused with
    the step that completes it."""
    if name in STAGES or name in WHOLE_STEPS:
        return name
    if name in STEP_NAMES:
        stage = stage_of(name)
        whole = next(
            n for n in WHOLE_STEPS if stage_of(n) == stage and STEP_NAMES.index(n) > STEP_NAMES.index(name)
        )
        raise TircError(
            f"step '{name}' leaves part of the {stage} stage's work, which is no dump (its first whole step is {whole})"
        )
    raise TircError(
        f"unknown stage or step '{name}' for {flag} (expected {', '.join(STAGES)}, {', '.join(WHOLE_STEPS)}{more})"
    )


def options_of(module: Module, overrides: list[str] | None = None, **fields) -> Options:
    """The module's header options, with command-line overrides applied."""
    try:
        options = Options.from_pairs(module.options)
    except TircError as err:
        if module.options_pos and err.line is None:
            err.line, err.col = module.options_pos
        raise
    pairs = [(k, v) for k, v in fields.items() if v is not None]
    options = Options.from_pairs(pairs, options) if pairs else options
    return options.with_text(overrides or [])


def capture_program(
    fn,
    inputs,
    source: str,
    path: str | None,
    options: Options,
    timings: Timings | None = None,
    names=None,
    locate=None,
):
    """Capture a callable into a checked capture-stage module (as its dump
    would read), timed in `timings` as `capture` (`capture.trace`, then the
    print and the read-back); `names` and `locate` as lowering's `capture`."""
    ctx = Context(options, timings if timings is not None else Timings())
    with ctx.timings.measure("capture"):
        with ctx.timings.measure("capture.trace"):
            module, lifted, spec = capture(fn, inputs, source, path, options.to_pairs(), names, locate)
        with ctx.timings.measure("capture.print"):
            text = print_ir(module)
        # A traced Python program may call any ATen op (running it called them
        # already); an exported program is a file's graph, untrusted as a dump is:
        # held to the allow-list here, where the error blames the user's file.
        if isinstance(fn, torch.export.ExportedProgram):
            try:
                check_text_ops(module)
            except TircError as err:
                raise TircError(f"the exported program's graph: {err.message}") from None
        # An exported program is verified as a dump is; a traced one goes on
        # as traced (pipeline.reads_back).
        if isinstance(fn, torch.export.ExportedProgram) or reads_back("capture", options):
            try:
                module = read_back(text, dump_name("capture"), ctx, named_ops(module), "capture")
            except TircError as err:
                raise err.located(dump_name("capture")) from None
    return module, text, lifted, spec


def compile_module(
    module: Module,
    options: Options,
    dump: DumpWriter | None = None,
    stop_after: str | None = None,
    capture_text: str | None = None,
    repro: Reproducers | None = None,
    cache: bool = False,
    timings: Timings | None = None,
    builds=None,
) -> Compiled:
    """Run the stages after `module`'s, writing the requested dumps; a crash
    in a pass leaves a reproducer in `repro` (none when it is None). With
    `cache`, a capture module compiled before (same text, same tirc) takes
    its code from the code cache when nothing asks for dumps. What runs is
    timed in `timings` (timings.py): on a cache hit, the lookup only.
    `builds`, a pool of kernel-build workers (codegen/build_pool.py), is
    started once the code cache misses; the launch tuner and the load of
    the generated code build their kernels in it."""
    check_stop_after(stop_after)
    if stop_after is not None and STAGES.index(stage_of(stop_after)) < module.stage_index:
        raise TircError(f"--stop-after {stop_after} is before the input's stage ({module.stage})")
    module.options = options.to_pairs()
    ctx = Context(options, timings if timings is not None else Timings(), builds)
    key = None
    if cache and _cacheable(module, options, dump, stop_after):
        with ctx.timings.measure("cache"), ctx.timings.measure("cache.lookup"):
            # Tuned Triton configs (in the memplan text) depend on the GPU too.
            key = print_ir(module) + tuning_target(options.backend, options.device)
            hit = code_cache.lookup(key)
        if hit is not None:

            def rebuild(reason: str) -> Compiled:
                code_cache.drop(key, reason)
                return compile_module(
                    module, options, capture_text=capture_text, repro=repro, cache=True, timings=ctx.timings
                )

            # The entry was compiled from this module: its ops (a traced program may call any) are vouched for.
            return Compiled(hit[1], hit[0], rebuild, named_ops(module), ctx.timings)
    if builds is not None:
        builds.start(len(module.graph) + len(module.nodes))  # they start up while the stages run
    if dump is not None and capture_text is not None and dump.wants("capture"):
        with ctx.timings.measure("capture"), ctx.timings.measure("capture.dump"):
            dump.write(dump_name("capture"), capture_text, "capture", module)

    def on_stage(name, result, text):
        if dump is not None and dump.wants(name):
            with ctx.timings.measure(f"{stage_of(name)}.dump"):
                dump.write(dump_name(name), text, name, result)

    codegen_follows = stop_after in (None, "memplan")
    on_pass = prebuild_kernels(ctx) if codegen_follows and options.fault is None else None
    steps = frozenset(n for n in WHOLE_STEPS if dump is not None and dump.wants(n))
    final = run_stages(module, ctx, stop_after, on_stage, repro, on_pass, steps)
    if final.stage != "memplan" or not codegen_follows:
        return Compiled(final, None, timings=ctx.timings)
    fault = options.fault
    miscompile = (
        (fault.op, fault.nth, fault.line) if fault is not None and fault.kind == "miscompile" else None
    )
    with ctx.timings.measure("codegen"):
        args = (final, options.backend, options.device, miscompile, True)
        code = run_pass("codegen", final, options, repro, generate, *args)
        if dump is not None:
            with ctx.timings.measure("codegen.dump"):
                dump.write("output_code.py", code, "codegen")
    if key is not None:
        with ctx.timings.measure("cache"), ctx.timings.measure("cache.store"):
            code_cache.store(key, code, print_ir(final))
    build = None
    if builds is not None:

        def build():
            build_kernels(final, code, options.backend, options.device, builds)

    return Compiled(final, code, timings=ctx.timings, build_kernels=build)


def check_determinism(dump, writer, argv: list[str] | None, timings: Timings) -> None:
    """The determinism check's second compile (repro's check_rerun), timed
    as `determinism`, when `recording` put a Recorder around `writer` for
    it (`dump` is then not `writer` itself)."""
    if dump is writer:
        return
    with timings.measure("determinism"):
        check_rerun(dump, argv)


def _cacheable(module: Module, options: Options, dump, stop_after) -> bool:
    debugging = options.fault is not None or options.check_determinism
    return (
        module.stage == "capture"
        and dump is None
        and stop_after is None
        and not debugging
        and code_cache.enabled()
    )
