"""The Python API: `tirc.compile` and the callable it returns."""

from __future__ import annotations

import contextlib
import gc
import inspect
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from codegen import build_pool
from ir_text import TircError
from lowering import extern_ops, fallback_ops
from repro import recording

from .compiler import capture_program, check_determinism, compile_module, parse_dump_after
from .crash import Reproducers, crash_report
from .cuda_graphs import GraphedCall, blocker
from .dumps import DumpWriter
from .options import Options
from .timings import Timings


def _source_file(model_or_fn) -> str | None:
    """The file that defines the module's class or the function, so that ops
    get `loc(...)` lines in it (None when Python cannot tell)."""
    target = type(model_or_fn) if isinstance(model_or_fn, torch.nn.Module) else model_or_fn
    try:
        path = inspect.getsourcefile(target)
    except TypeError:
        return None
    # torch's own modules (nn.Sequential, nn.Linear) are not the user's program.
    torch_dir = os.path.dirname(os.path.realpath(torch.__file__))
    if path is None or os.path.realpath(path).startswith(torch_dir + os.sep):
        return None
    return path


class CompiledProgram:
    """Calls the generated code with the model's current parameters and the
    given inputs, and rebuilds the program's output structure."""

    def __init__(self, call, lifted, out_spec, compiled, arity: int, root=None, graphs: bool = False):
        self._call = call
        # Detached once: they share storage with the parameters, so in-place
        # updates (an optimizer step) are seen; detaching per call cost time
        # every call (measured: docs/design-notes.md, "Known gaps").
        self._lifted = [t.detach() for _, t in lifted]
        # Where each parameter and buffer of the module `root` is held, to see
        # one replaced (`m.weight = nn.Parameter(...)`, `m.half()`) at a call.
        self._holders = _holders(root, lifted) if root is not None else []
        # The training flag, when traced, of each submodule whose forward
        # reads it: train and eval trace to different programs (batch norm's
        # statistics, dropout).
        self._modes = _mode_dependent(root) if root is not None else []
        # (name, tensor) of the leading inputs: parameters, buffers, constants.
        self.lifted = list(lifted)
        self._out_spec = out_spec
        self._rebuild = _rebuilder(out_spec)
        self._extern_calls = compiled.code is not None and "runtime.extern_call(" in compiled.code
        self.compiled = compiled
        # graphs: whether calls may replay a CUDA graph (tirc/cuda_graphs.py).
        self.graphs = _graphs(call, compiled.code, len(self._lifted)) if graphs else None
        self._run = self.graphs or call
        self._arity = arity  # the user's inputs, after the lifted ones

    def _rebind(self, holder: _Holder) -> None:
        """A parameter or buffer replaced since the last call: the new tensor
        is passed from now on (the generated code copies one of another
        layout into the compiled one, as any input), or a clear error when
        it is gone."""
        current = getattr(holder.owner, holder.attr, None)
        if not isinstance(current, torch.Tensor):
            raise TypeError(
                f"the compiled module's {self.lifted[holder.k][0]} is no longer a tensor "
                f"({type(current).__name__}); compile it again"
            )
        self._lifted[holder.k] = current.detach()
        holder.tensor, holder.data = current, current.data_ptr()
        holder.table = (
            holder.owner._parameters if holder.attr in holder.owner._parameters else holder.owner._buffers
        )

    @property
    def code(self) -> str:
        return self.compiled.code

    @property
    def timings(self) -> dict[str, float]:
        """Seconds per stage and step of the compile (tirc/timings.py), in
        the order they ran: each stage (`capture`, `cache`, `lower`,
        `schedule`, `fusion`, `memplan`, `codegen`, `build`) followed by its
        steps, named `STAGE.STEP`."""
        return self.compiled.timings.as_dict()

    @property
    def fallback_ops(self) -> tuple[str, ...]:
        """ATen ops that run as extern calls because tirc has no lowering for them."""
        return fallback_ops(self.compiled.module)

    @property
    def extern_ops(self) -> tuple[str, ...]:
        """Every ATen op called as an extern (fallbacks, and matmul/convolution by design)."""
        return extern_ops(self.compiled.module)

    def __call__(self, *inputs):
        return self.call_boxed(list(inputs))

    def call_boxed(self, inputs: list):
        """The call on the list `inputs`, which it empties: a program that owns
        its inputs (the free_inputs option, a training graph's) then holds
        the only references, and frees each after its last use."""
        if len(inputs) != self._arity:
            raise TypeError(f"the compiled program takes {self._arity} input tensor(s), got {len(inputs)}")
        for holder in self._holders:
            held = holder.table.get(holder.attr)
            # Another tensor, or the same parameter given new data (`.data =`,
            # as `m.half()` and `m.to()` do).
            if held is not holder.tensor or held.data_ptr() != holder.data:
                self._rebind(holder)
        for module, training in self._modes:
            if module.training != training:
                raise RuntimeError(
                    f"the compiled module was traced in {'training' if training else 'eval'} mode and is "
                    f"in {'training' if module.training else 'eval'} mode now (.train()/.eval() after "
                    "tirc.compile); compile it again in this mode"
                )
        # Autograd off around the call, as torch.no_grad() would be, without
        # the context manager's microsecond (a call of a small graph is a few).
        # Only extern (ATen) calls could record a graph: kernels write into
        # fresh buffers, so a program without any skips the switch.
        grad = self._extern_calls and torch.is_grad_enabled()
        if grad:
            torch._C._set_grad_enabled(False)
        args = self._lifted + inputs
        inputs.clear()
        try:
            flat = self._run(args)
        finally:
            if grad:
                torch._C._set_grad_enabled(True)
        return self._rebuild(flat)


def _graphs(call, code: str | None, lifted: int) -> GraphedCall | None:
    """The call of a CUDA program replayed as a CUDA graph (tirc/cuda_graphs.py),
    or None where a graph would change what the program does."""
    if code is None or blocker(code) is not None:
        return None
    return GraphedCall(call, lifted)


@dataclass
class _Holder:
    """The dict (a module's `_parameters` or `_buffers`) that holds lifted
    input `k` under `attr`, and the tensor it held when last read, with its
    data pointer then."""

    k: int
    owner: torch.nn.Module
    table: dict
    attr: str
    tensor: torch.Tensor
    data: int


def _holders(root: torch.nn.Module, lifted) -> list[_Holder]:
    holders = []
    for k, (name, tensor) in enumerate(lifted):
        path, _, attr = name.rpartition(".")
        try:
            owner = root.get_submodule(path) if path else root
        except AttributeError:
            continue
        for table in (owner._parameters, owner._buffers):
            if table.get(attr) is tensor:
                holders.append(_Holder(k, owner, table, attr, tensor, tensor.data_ptr()))
    return holders


def _mode_dependent(root: torch.nn.Module) -> list[tuple[torch.nn.Module, bool]]:
    """(module, its training flag) for the submodules whose forward names
    `training` (batch norm, dropout, a user's `if self.training`): checked at
    every call, so only those, not every Linear of a model (measured:
    docs/design-notes.md, "Known gaps")."""
    modes = []
    for module in root.modules():
        code = getattr(type(module).forward, "__code__", None)
        if code is None or "training" in code.co_names:
            modes.append((module, module.training))
    return modes


def _rebuilder(outputs):
    """The output structure from the flat outputs (an OutputSpec): a leaf or a
    plain tuple or list of leaves directly, anything else (and None leaves,
    which the graph does not return) through pytree."""
    pytree = torch.utils._pytree
    spec = outputs.tree
    if outputs.nones:
        return lambda flat: pytree.tree_unflatten(outputs.rebuild(flat), spec)
    if spec.is_leaf():
        return lambda flat: flat[0]
    positions = pytree.tree_unflatten(list(range(spec.num_leaves)), spec)
    if type(positions) in (tuple, list) and list(positions) == list(range(spec.num_leaves)):
        return type(positions)
    return lambda flat: pytree.tree_unflatten(list(flat), spec)


def compile(
    model_or_fn,
    example_inputs,
    backend: str = "cpp",
    device: str | None = None,
    dump_after=None,
    dump_dir=None,
    options: dict | None = None,
    source: str | None = None,
    train: bool = False,
    report: bool = False,
):
    """Compile a module or function for inputs shaped like `example_inputs`.

    With `train`, the program is compiled for training
    (tirc/training_program.py): its forward and backward graphs each by tirc, so its outputs support
    `backward()` and gradients reach the parameters' `.grad` (and inputs
    that require grad) as in eager; the forward graph is compiled here, the
    backward at the first `backward()`, and with dumps each writes its own
    directory, `dump_dir/forward` and `dump_dir/backward`.

    `dump_after` names stages (or "all") whose IR is written to `dump_dir`,
    with output_code.py and manifest.json; `report` writes
    `dump_dir/report.html` too (tirc/report), once the compile is done.

    The result's `.timings` is an ordered mapping of name -> seconds
    (time.perf_counter) of what this compile ran, in the order it ran:
    the stages `capture`, `cache` (the code-cache lookup and store),
    `lower`, `schedule`, `fusion`, `memplan`, `codegen`, `build` (loading
    output_code.py, which builds the kernels) and `determinism` (the
    check_determinism option's second compile), each followed by its steps,
    dotted under it: the stage table's steps (`lower.ops`, `fusion.fuse`,
    ...), and `STAGE.print` (after every stage), `STAGE.parse` and
    `STAGE.verify` (the read-back of the memplan stage, or of every stage
    with the verify_roundtrip option), `STAGE.dump` (writing its dump),
    `capture.trace`, `fusion.prebuild` (starting the kernels' build),
    `build.kernels` (the Triton kernels built in the pool of build workers,
    codegen/build_pool.py), and
    `cache.lookup`, `cache.store`, `cache.parse`. A code-cache hit lists
    only what ran: capture, the lookup and the build. The stages do not
    overlap: their sum is at most the compile's wall time. On a terminal,
    a compile longer than about 2 seconds prints one line per stage on
    stderr (`tirc: lower 0.4 s`).
    """
    with gc_paused():
        try:
            return _compile(
                model_or_fn,
                example_inputs,
                backend,
                device,
                dump_after,
                dump_dir,
                options,
                source,
                train,
                report,
            )
        except TircError as err:
            # An error that names no file is about the call's arguments.
            raise err.located("tirc.compile") from None


@contextlib.contextmanager
def gc_paused():
    """Compiling makes many short-lived objects (FX nodes, sympy expressions,
    parse trees) and Python's cyclic collector, triggered by them, walks
    torch's whole heap each time: a third of a compile. It is paused for the
    compile and restored after (cycles are collected at its next pass)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _compile(
    model_or_fn, example_inputs, backend, device, dump_after, dump_dir, options, source, train, report
):
    example_inputs = list(example_inputs)
    if device is None:
        device = "cuda" if any(getattr(x, "is_cuda", False) for x in example_inputs) else "cpu"
    extra = dict(options or {})
    for key, value in (("backend", backend), ("device", device)):
        if extra.get(key, value) != value:
            raise TircError(f"options[{key!r}] = {extra[key]!r} contradicts {key}={value!r}")
        extra[key] = value
    opts = Options.from_pairs(sorted(extra.items()))
    path = None if source else _source_file(model_or_fn)
    name = source or (os.path.basename(path) if path else "program")
    stages = parse_dump_after(dump_after)
    if stages and dump_dir is None:
        raise TircError("dump_after needs a dump_dir")
    if report and not stages:
        raise TircError("report=True needs dumps: give dump_after (and dump_dir)")
    if train:
        from .training_program import compile_training

        return compile_training(model_or_fn, example_inputs, opts, name, path, stages, dump_dir, report)
    root = model_or_fn if isinstance(model_or_fn, torch.nn.Module) else None
    return compile_program(
        model_or_fn, example_inputs, opts, name, path, stages, dump_dir, root=root, report=report
    )


def compile_program(
    fn,
    example_inputs,
    opts: Options,
    name: str,
    path,
    stages,
    dump_dir,
    root=None,
    names=None,
    locate=None,
    report: bool = False,
    progress: Timings | None = None,
    sources: list[str] | None = None,
) -> CompiledProgram:
    """Capture `fn` on `example_inputs` and compile it with `opts`, writing
    the `stages` dumps into `dump_dir` (and report.html with `report`);
    `root` is the nn.Module whose parameters and buffers the program reads
    at each call, `names` and `locate` as capture's, `progress` the
    timings to measure into (default: Timings.for_stderr()), `sources` the
    user's files the report shows (default: `path`). A crash that wrote a
    reproducer says where in a note on the exception (its traceback shows
    it)."""
    timings = progress if progress is not None else Timings.for_stderr()
    module, text, lifted, spec = capture_program(fn, example_inputs, name, path, opts, timings, names, locate)
    writer = DumpWriter(dump_dir, stages, name, opts, timings=timings) if dump_dir is not None else None
    repro = Reproducers(Path(dump_dir if dump_dir is not None else "."))
    # check_determinism: the program cannot be captured again in another
    # process; the second compile starts from this capture dump.
    dump = recording(opts, writer)
    builds = build_pool(opts.backend, opts.device)
    try:
        compiled = compile_module(
            module, opts, dump, capture_text=text, repro=repro, cache=True, timings=timings, builds=builds
        )
        check_determinism(dump, writer, None, timings)
        call = compiled.load().call
    except Exception as err:
        _note_reproducer(err)
        raise
    finally:
        if builds is not None:
            builds.close()
    if writer is not None:
        writer.finish()  # the manifest, with the timings of the whole compile
        if report:
            from .report import write_report

            write_report(Path(dump_dir), sources=sources or ([path] if path else None))
    graphs = opts.device == "cuda" and opts.cuda_graphs and not opts.free_inputs
    return CompiledProgram(call, lifted, spec, compiled, len(example_inputs), root, graphs)


def _note_reproducer(err: BaseException) -> None:
    """Name the reproducer that a crash wrote in a note on the exception
    (Python 3.11's add_note; the CLI prints it itself)."""
    lines = crash_report(err)
    if lines and hasattr(err, "add_note"):
        err.add_note(lines[0])
