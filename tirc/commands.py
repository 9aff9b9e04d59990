"""`tirc compile` and `tirc replay`."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from codegen import random_input
from ir_text import TircError, to_torch
from lowering import interpret

from .compare import compare_outputs
from .compiler import capture_program, compile_module, options_of, parse_dump_after
from .dumps import DumpWriter
from .options import Options
from .pipeline import Context, check_module
from .sources import load_dump, load_python

EXIT_OK, EXIT_MISMATCH = 0, 1


def header_inputs(module) -> list[torch.Tensor]:
    """The inputs a dump's header describes (seeded, in their strided layout)."""
    inputs = []
    for inp in module.inputs:
        t = inp.value.type
        device = "cuda" if inp.device.startswith("cuda") else inp.device
        inputs.append(random_input(t.shape, t.strides, to_torch(t.dtype), device, inp.seed))
    return inputs


def _report(mismatch, what: str) -> int:
    if mismatch is None:
        print(f"ok: outputs match {what}", file=sys.stderr)
        return EXIT_OK
    print(f"mismatch against {what}: {mismatch.message}", file=sys.stderr)
    return EXIT_MISMATCH


def _clone(xs):
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]


def compile_command(args) -> int:
    try:
        return _compile(args)
    except TircError as err:
        raise err.located(args.source) from None


def _compile(args) -> int:
    stages = parse_dump_after(args.dump_after)
    dump_dir = args.dump_dir or ("tirc-dump" if stages else None)
    suffix = Path(args.source).suffix
    if suffix == ".pt2":
        raise TircError(".pt2 (torch.export) sources are not supported yet; compile the .py program")
    if suffix not in (".py", ".tir"):
        raise TircError("expected a .py program or a .tir dump")
    if suffix == ".tir":
        if args.entry:
            raise TircError("--entry applies to .py sources only")
        module = load_dump(args.source)
        options = options_of(module, args.option, backend=args.backend, device=args.device)
        try:
            check_module(module, Context(options))
        except TircError as err:
            raise err.located(args.source) from None
        writer = DumpWriter(dump_dir, stages, module.source, options) if dump_dir else None
        compiled = compile_module(module, options, writer, args.stop_after)
        program = None
    else:
        program = load_python(args.source, args.entry)
        base = Options(backend=args.backend or "cpp", device=args.device or "cpu")
        options = base.with_text(args.option)
        if options.device == "cuda" and not torch.cuda.is_available():
            raise TircError("--device cuda: no CUDA device is available here")
        inputs = [x.to(options.device) for x in program.inputs]
        fn = program.fn.to(options.device) if isinstance(program.fn, torch.nn.Module) else program.fn
        program.fn, program.inputs = fn, inputs
        module, text, lifted, spec = capture_program(fn, inputs, program.name, program.path, options)
        writer = DumpWriter(dump_dir, stages, program.name, options) if dump_dir else None
        compiled = compile_module(module, options, writer, args.stop_after, capture_text=text)
    kernels = len(compiled.module.kernels or ())
    where = f"; dumps in {dump_dir}" if writer else ""
    print(
        f"tirc: compiled {compiled.module.source} through {compiled.module.stage}"
        f" ({kernels} kernel(s), backend {options.backend}){where}",
        file=sys.stderr,
    )
    if not args.check:
        return EXIT_OK
    call = compiled.load().call
    if program is None:
        return _check_dump(compiled, module, call)
    params = [t.detach() for _, t in lifted]
    with torch.no_grad():
        expected = program.fn(*_clone(program.inputs))
        actual = call(params + _clone(program.inputs))
    expected = torch.utils._pytree.tree_flatten(expected)[0]
    return _report(compare_outputs(list(actual), expected), "eager PyTorch")


def _check_dump(compiled, module, call) -> int:
    if any(i.device.startswith("cuda") for i in module.inputs) and not torch.cuda.is_available():
        raise TircError("the dump's inputs live on cuda, and no CUDA device is available here")
    inputs = header_inputs(module)
    expected = interpret(module, _clone(inputs))
    actual = call(_clone(inputs))
    what = "eager PyTorch" if module.stage == "capture" else "the reference interpreter"
    return _report(compare_outputs(list(actual), expected), what)


def replay_command(args) -> int:
    try:
        return _replay(args)
    except TircError as err:
        raise err.located(args.file) from None


def _replay(args) -> int:
    module = load_dump(args.file)
    options = options_of(module, args.option, backend=args.backend, device=args.device)
    try:
        check_module(module, Context(options))
    except TircError as err:
        raise err.located(args.file) from None
    compiled = compile_module(module, options)
    return _check_dump(compiled, module, compiled.load().call)
