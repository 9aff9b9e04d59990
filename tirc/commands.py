"""`tirc compile` and `tirc replay`."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import torch

from codegen import build_pool, random_input
from ir_text import TircError, first_line, is_float, print_ir, printable, to_torch
from lowering import copy_with_layout, fallback_ops, interpret, widened
from repro import compile_args, recording
from scheduler import extern_kernels

from . import profiling
from .compare import Mismatch, compare_outputs
from .compiler import capture_program, check_determinism, compile_module, options_of, parse_dump_after
from .crash import Reproducers
from .dumps import DumpWriter, serialize_input, write_atomic
from .options import Options
from .pipeline import Context, check_module
from .sources import load_dump, load_exported, load_python, load_saved_input, read_saved_input, read_text
from .timings import Timings, table
from .train_command import train_command

EXIT_OK, EXIT_MISMATCH = 0, 1


def header_inputs(module, path: str | None = None) -> list[torch.Tensor]:
    """The inputs a dump's header describes: an input with a sha256 is loaded
    from `inputs/<sha256>.pt` beside the dump at `path`, the others are seeded
    (in their strided layout)."""
    if any(i.device.startswith("cuda") for i in module.inputs) and not torch.cuda.is_available():
        raise TircError("the dump's inputs live on cuda, and no CUDA device is available here")
    inputs = []
    for inp in module.inputs:
        if inp.sha256 is not None and path is not None:
            inputs.append(load_saved_input(path, inp))
            continue
        t = inp.value.type
        device = "cuda" if inp.device.startswith("cuda") else inp.device
        inputs.append(random_input(t.shape, t.strides, to_torch(t.dtype), device, inp.seed, inp.range))
    return inputs


def _report(mismatch, what: str) -> int:
    if mismatch is None:
        print(f"ok: outputs match {what}", file=sys.stderr)
        return EXIT_OK
    print(f"mismatch against {what}: {mismatch.message}", file=sys.stderr)
    return EXIT_MISMATCH


def _compare(actual, expected, updated: dict[str, tuple], reference=None):
    """Outputs first, then the inputs the program updates ({name: (actual, expected)})."""
    mismatch = compare_outputs(list(actual), list(expected), reference)
    for name, (a, e) in updated.items():
        if mismatch is not None:
            break
        found = compare_outputs([a], [e])
        if found is not None:
            mismatch = Mismatch(-1, f"updated input %{name}: {found.message.partition(': ')[2]}")
    return mismatch


def _updated(module, actual: list, expected: list) -> dict[str, tuple]:
    """The inputs `module` updates (parameters and buffers among them), by
    name, as (actual, expected) values from the lists of its inputs."""
    position = {id(inp.value): k for k, inp in enumerate(module.inputs)}
    return {
        target.hint: (actual[position[id(target)]], expected[position[id(target)]])
        for target, _ in module.updates
    }


def _clone(xs):
    return [copy_with_layout(x) if isinstance(x, torch.Tensor) else x for x in xs]


def compile_command(args) -> int:
    if getattr(args, "report", False) and not args.dump_after:
        args.dump_after = "all"  # a report shows the dumps
    try:
        status = _compile(args)
    except TircError as err:
        raise err.located(args.source) from None
    if getattr(args, "report", False):
        _write_report(args)
    return status


def _write_report(args) -> None:
    """`--report`: DIR/report.html, once every file of the compile is written
    (the dumps, output_code.py, the manifest with its timings and profile)."""
    from .report import write_report

    sources = [args.source] if Path(args.source).suffix == ".py" else []
    path = write_report(args.dump_dir or "tirc-dump", sources=sources)
    print(f"tirc: report in {printable(str(path))}", file=sys.stderr)


def _compile(args) -> int:
    timings = Timings.for_stderr(args.verbose)
    stages = parse_dump_after(args.dump_after)
    dump_dir = args.dump_dir or ("tirc-dump" if stages or args.save_inputs else None)
    suffix = Path(args.source).suffix
    if suffix not in (".py", ".pt2", ".tir"):
        raise TircError("expected a .pt2 file (torch.export.save), a .py program or a .tir dump")
    if args.entry and suffix != ".py":
        raise TircError("--entry applies to .py sources only")
    profiling.check_flags(args)
    if getattr(args, "train", False):
        if suffix == ".tir":
            raise TircError(
                "--train compiles a .py program; a forward or backward dump compiles as any dump, without --train"
            )
        return train_command(args, timings)
    if suffix == ".tir":
        return _compile_dump(args, stages, dump_dir, timings)
    with timings.measure("source"):
        program = load_exported(args.source) if suffix == ".pt2" else load_python(args.source, args.entry)
        options = Options(backend=args.backend or "cpp", device=args.device or "cpu").with_text(args.option)
        if options.device == "cuda" and not torch.cuda.is_available():
            raise TircError("--device cuda: no CUDA device is available here")
        program.to(options.device)
    path = program.path if suffix == ".py" else None
    module, text, lifted, _ = capture_program(
        program.fn, program.inputs, program.name, path, options, timings
    )
    writer = DumpWriter(dump_dir, stages, program.name, options, timings=timings) if dump_dir else None
    state = [t.detach() for _, t in lifted]
    if args.save_inputs:
        writer.save_inputs(module.inputs, [serialize_input(t) for t in state + program.inputs])
        text = print_ir(module)  # the capture dump, now with the sha256s
    repro = Reproducers(Path(dump_dir or "."))
    dump = recording(options, writer)  # check_determinism: keeps every file to compare
    with _build_workers(options) as builds:
        compiled = compile_module(
            module,
            options,
            dump,
            args.stop_after,
            capture_text=text,
            repro=repro,
            cache=True,
            timings=timings,
            builds=builds,
        )
        _after_compile(args, compiled, options, dump, writer, timings)
        status = _check_program(module, compiled.load().call, program, state) if args.check else EXIT_OK
        profiling.profile_command(args, compiled, options, state + program.inputs, writer)
        return status


def _check_program(module, call, program, state: list[torch.Tensor]) -> int:
    """Run the compiled code and eager PyTorch on the program's inputs, and compare.
    The program may update its state and inputs: the compiled run gets copies;
    eager updates the module's own parameters and buffers, which `state`
    (detached, sharing their storage) then holds, and its own copies of the inputs."""
    actual_state, actual_inputs = _clone(state), _clone(program.inputs)
    expected_inputs = _clone(program.inputs)
    with torch.no_grad():
        try:
            expected = program.eager(expected_inputs)
        except Exception as err:  # the inputs are outside what the program accepts
            raise TircError(
                f"--check: eager PyTorch raises on the program's inputs: {type(err).__name__}: {first_line(err)}"
            ) from None
        actual = call(actual_state + actual_inputs)
    # None leaves are no outputs of the compiled graph (capture drops them).
    expected = [leaf for leaf in torch.utils._pytree.tree_flatten(expected)[0] if leaf is not None]
    updated = _updated(module, actual_state + actual_inputs, state + expected_inputs)
    return _report(_compare(actual, expected, updated), "eager PyTorch")


def _checked_dump(path: str, args, timings: Timings):
    """(module, options) of the dump at `path`, checked with the options
    that `args` (--option, --backend, --device) give it; timed as `source`."""
    with timings.measure("source"):
        module = load_dump(path)
        options = options_of(module, args.option, backend=args.backend, device=args.device)
        try:
            check_module(module, Context(options))
        except TircError as err:
            raise err.located(path) from None
    return module, options


def _compile_dump(args, stages: set[str], dump_dir: str | None, timings: Timings) -> int:
    module, options = _checked_dump(args.source, args, timings)
    # Read (and check) saved inputs before compiling: a missing file fails fast.
    wants_inputs = args.check or args.save_inputs or profiling.wanted(args)
    inputs = header_inputs(module, args.source) if wants_inputs else None
    writer = (
        DumpWriter(dump_dir, stages, module.source, options, keep=args.source, timings=timings)
        if dump_dir
        else None
    )
    if writer is not None and args.save_inputs:
        writer.save_inputs(module.inputs, [serialize_input(t) for t in inputs])
    elif writer is not None and any(inp.sha256 for inp in module.inputs):
        # The later dumps name the same files: they go beside them, byte for byte.
        saved = [inp for inp in module.inputs if inp.sha256]
        writer.save_inputs(saved, [read_saved_input(args.source, inp) for inp in saved])
    # A dump's reproducer goes to a dump directory: the one asked for, else the dump's own.
    repro = Reproducers(Path(dump_dir) if dump_dir else Path(args.source).parent, read_text(args.source))
    dump = recording(options, writer)  # check_determinism: keeps every file to compare
    with _build_workers(options) as builds:
        compiled = compile_module(
            module, options, dump, args.stop_after, repro=repro, timings=timings, builds=builds
        )
        _after_compile(args, compiled, options, dump, writer, timings)
        status = _check_dump(module, compiled.load().call, inputs) if args.check else EXIT_OK
        profiling.profile_command(args, compiled, options, inputs, writer)
        return status


@contextlib.contextmanager
def _build_workers(options: Options):
    """The compile's pool of kernel-build workers (codegen/build_pool.py), or
    None; stopped when the command is done with the compiled code."""
    builds = build_pool(options.backend, options.device)
    try:
        yield builds
    finally:
        if builds is not None:
            builds.close()


def _after_compile(
    args, compiled, options: Options, dump, writer: DumpWriter | None, timings: Timings
) -> None:
    """After a compile: the determinism check's second compile, the dumps'
    manifest and `-o` output, the summary line, and the timings table."""
    check_determinism(dump, writer, compile_args(args), timings)
    _finish(args, compiled, writer)
    _summary(compiled, options, writer)
    _print_timings(args, compiled)


def _finish(args, compiled, writer: DumpWriter | None) -> None:
    """After the compile: with `--timings`, the code loaded, so that its
    kernels' build is timed (`build`; the process would wait for the build
    started in the background anyway); the manifest with every timing; the
    `-o` output."""
    if args.timings and compiled.code is not None:
        compiled.load()
    if writer is not None:
        writer.finish()
    _write_output(args.output, compiled.module)


def _print_timings(args, compiled) -> None:
    """`--timings`: the table (timings.py) on stderr, after the summary."""
    if args.timings:
        for line in table(compiled.timings.as_dict()):
            print(line, file=sys.stderr)


def _write_output(output: str | None, module) -> None:
    """`-o FILE`: the final module's text, to FILE (atomically) or, for `-`,
    to stdout, which then holds nothing else (the summary goes to stderr)."""
    if output is None:
        return
    text = print_ir(module)
    if output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_atomic(Path(output), text)


def _summary(compiled, options: Options, writer: DumpWriter | None) -> None:
    final = compiled.module
    externs = len(extern_kernels(final)) if final.kernels else 0
    kernels = len(final.kernels or ()) - externs
    calls = f", {externs} extern call(s)" if externs else ""
    where = ""
    if writer is not None:
        # --stop-after may stop before every stage --dump-after names.
        where = f"; dumps in {writer.dir}" if writer.written else f"; no dumps written to {writer.dir}"
    print(
        # The source name is a dump's string: escaped, it cannot forge a line.
        f"tirc: compiled {printable(final.source)} through {final.stage}"
        f" ({kernels} kernel(s){calls}, backend {options.backend}){where}",
        file=sys.stderr,
    )
    fallbacks = fallback_ops(final) if final.stage != "capture" else ()
    if fallbacks:
        print(f"tirc: {len(fallbacks)} op(s) run as ATen fallbacks: {', '.join(fallbacks)}", file=sys.stderr)


def _check_dump(module, call, inputs: list[torch.Tensor]) -> int:
    """Run the compiled code and the reference on the dump's inputs, and compare."""
    what = "eager PyTorch" if module.stage == "capture" else "the reference interpreter"
    return _report(dump_mismatch(module, call, inputs), what)


def dump_mismatch(module, call, inputs: list[torch.Tensor]) -> Mismatch | None:
    """The first difference between the compiled code (`call`) and the
    reference on the dump's inputs: outputs, then updated inputs. A float32
    difference that only the float64 reference could judge, when that
    cannot be computed, raises TircError (undecided: exit 2, not 1)."""
    expected_inputs, actual_inputs = _clone(inputs), _clone(inputs)
    expected = _reference(module, expected_inputs)
    actual = call(list(actual_inputs))
    updated = _updated(module, actual_inputs, expected_inputs)
    reference = lambda: _float64_reference(module, inputs)  # noqa: E731
    return _compare(actual, expected, updated, reference)


def _reference(module, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """The reference's results on `inputs`. An op of the program refusing
    these values (an index out of range) is a problem of the inputs, not an
    internal error: one message that says which inputs they were."""
    try:
        return interpret(module, inputs)
    except TircError:
        raise
    except Exception as err:  # an ATen op's own check of the values
        what = "eager PyTorch" if module.stage == "capture" else "the reference interpreter"
        first = (str(err).strip().splitlines() or ["(no message)"])[0]
        message = f"{what} fails on the dump's inputs: {type(err).__name__}: {first}"
        if any(
            inp.sha256 is None
            and inp.range is None
            and inp.value.type.dtype != "b8"
            and not is_float(inp.value.type.dtype)
            for inp in module.inputs
        ):
            message += (
                "; its integer inputs without a `range` attribute are random values from the header's"
                " seeds (-8 to 8), which the program may not accept (as indices, or as divisors after"
                " arithmetic): `tirc compile --save-inputs` saves the real ones for replay, or give"
                " the input a `range = [lo, hi]`"
            )
        raise TircError(message) from None


def _float64_reference(module, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """The dump's program run in float64 (every f32 made f64: lowering.widened), as
    a reference for float32 outputs. Ops without a float64 kernel run through
    their float64 stand-ins (lowering.FLOAT64_EQUIVALENTS). When the program
    still does not run, TircError says why (at the op without a float64
    kernel, where that is the cause): no reference is no verdict."""
    try:
        wide = widened(module, "f32", "f64")
        with torch.no_grad():
            outputs = interpret(
                wide,
                [copy_with_layout(x, torch.float64 if x.dtype == torch.float32 else None) for x in inputs],
            )
    except Exception as err:  # whatever the cause, a verdict cannot rest on it
        # widened keeps each op's position, so an op of `wide` points into the dump
        line, col = getattr(err, "pos", None) or (None, None)
        message = f"the float64 reference could not be computed: {type(err).__name__}: {first_line(err)}"
        raise TircError(message, line=line, col=col) from None
    return [o.double() if o.is_floating_point() else o for o in outputs]


def replay_command(args) -> int:
    try:
        return _replay(args)
    except TircError as err:
        raise err.located(args.file) from None


def _replay(args) -> int:
    timings = Timings.for_stderr(args.verbose)
    profiling.check_flags(args)
    module, options = _checked_dump(args.file, args, timings)
    inputs = header_inputs(module, args.file)
    repro = Reproducers(Path(args.file).parent, read_text(args.file))  # beside the dump, never elsewhere
    with _build_workers(options) as builds:
        compiled = compile_module(module, options, repro=repro, timings=timings, builds=builds)
        call = compiled.load().call
    status = _check_dump(module, call, inputs)
    _print_timings(args, compiled)
    profiling.profile_command(args, compiled, options, inputs)
    return status
