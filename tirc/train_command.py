"""`tirc compile model.py --train`: the training step of a benchmark-convention
file, its forward and backward graphs compiled by tirc (tirc/training.py).

The step is the model's forward in training mode on `get_inputs()`, a loss,
and its backward. The loss is the file's `loss(outputs, inputs)` when it
defines one, else the sum of every output. Gradients are taken for the
model's parameters; a program without parameters that require grad (an
`--entry` function) gets them for its floating-point inputs instead.
`--check` runs the step in eager PyTorch too, from the same parameters, and
compares the loss, the outputs, every gradient and the updated buffers.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import torch

from ir_text import TircError, first_line, printable

from .compare import compare_outputs
from .compiler import parse_dump_after
from .options import Options
from .sources import load_python
from .timings import table
from .training_program import compile_training

EXIT_OK, EXIT_MISMATCH = 0, 1

# Flags of `tirc compile` that a training compile does not take, and why.
_REFUSED = {
    "stop_after": "--stop-after: a training compile runs both graphs through codegen",
    "output": "-o: a training compile has two graphs; take their stages from --dump-after",
    "save_inputs": "--save-inputs: a training compile's dumps are replayed on seeded inputs",
}


def train_command(args, timings) -> int:
    for flag, why in _REFUSED.items():
        if getattr(args, flag, None):
            raise TircError(f"{why} (with --train)")
    if Path(args.source).suffix != ".py":
        raise TircError("--train compiles a .py program (class Model + get_inputs)")
    stages = parse_dump_after(args.dump_after)
    dump_dir = args.dump_dir or ("tirc-dump" if stages else None)
    with timings.measure("source"):
        program = load_python(args.source, args.entry, train=True)
        options = Options(backend=args.backend or "cpp", device=args.device or "cpu").with_text(args.option)
        if options.device == "cuda" and not torch.cuda.is_available():
            raise TircError("--device cuda: no CUDA device is available here")
        program.to(options.device)
    inputs = _with_gradients(program)
    reference = copy.deepcopy(program.fn) if args.check else None
    compiled = compile_training(
        program.fn, inputs, options, program.name, program.path, stages, dump_dir, verbose=args.verbose
    )
    # One step compiles the backward (at its first call): --check's own, else a plain one.
    if args.check:
        status, verdict = _check(program, compiled, reference, inputs)
    else:
        step(compiled, _fresh(inputs), _loss(program))
        status, verdict = EXIT_OK, None
    _summary(program.name, compiled, options, dump_dir if stages else None)
    if args.timings:
        for kind, graph in compiled.graphs.programs.items():
            print(f"tirc: {kind}", file=sys.stderr)
            for line in table(graph.timings):
                print(line, file=sys.stderr)
    if verdict is not None:
        print(verdict, file=sys.stderr)
    return status


def _with_gradients(program) -> list[torch.Tensor]:
    """The inputs, floating-point ones requiring grad when the program has no
    parameter that does (there would be nothing to train otherwise)."""
    module = program.fn if isinstance(program.fn, torch.nn.Module) else None
    if module is not None and any(p.requires_grad for p in module.parameters()):
        return list(program.inputs)
    return [x.detach().requires_grad_(x.is_floating_point()) for x in program.inputs]


def _summary(name: str, compiled, options: Options, dump_dir) -> None:
    parts = []
    for kind, graph in compiled.graphs.programs.items():
        final = graph.compiled.module
        parts.append(f"{kind} {len(final.kernels or ())} kernel(s)")
    partition = compiled.partition
    saved = f"{len(partition.saved)} saved value(s), {partition.saved_bytes} bytes"
    where = f"; dumps in {dump_dir}" if dump_dir else ""
    print(
        f"tirc: compiled {printable(name)} for training ({', '.join(parts)}; {saved}; "
        f"backend {options.backend}){where}",
        file=sys.stderr,
    )


def step(fn, inputs: list[torch.Tensor], loss_fn) -> dict:
    """One training step of `fn` (a module or the compiled program) on
    `inputs`: its outputs and loss; the gradients are left in `.grad`."""
    outputs = fn(*inputs)
    loss = loss_fn(outputs, inputs)
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise TircError("the loss must be a tensor of one element (define loss(outputs, inputs) to set it)")
    loss.backward()
    return {"outputs": outputs, "loss": loss.detach()}


def _loss(program):
    if program.loss is not None:
        return program.loss
    return lambda outputs, inputs: sum(
        leaf.float().sum()
        for leaf in torch.utils._pytree.tree_leaves(outputs)
        if isinstance(leaf, torch.Tensor)
    )


def _results(module, inputs, taken: dict) -> dict[str, torch.Tensor]:
    """What a step is judged by, by name: the loss, the outputs, each
    parameter's and input's gradient, and each buffer (batch norm's
    statistics, which training mode updates)."""
    out = {"loss": taken["loss"]}
    for k, leaf in enumerate(torch.utils._pytree.tree_leaves(taken["outputs"])):
        out[f"output {k}"] = leaf.detach()
    if module is not None:
        for name, p in module.named_parameters():
            if p.grad is not None:
                out[f"gradient of {name}"] = p.grad
        for name, b in module.named_buffers():
            out[f"buffer {name}"] = b
    for k, x in enumerate(inputs):
        if x.grad is not None:
            out[f"gradient of input {k}"] = x.grad
    return out


def _wide(x: torch.Tensor) -> torch.Tensor:
    if not x.is_floating_point():
        return x.detach().clone()
    return x.detach().double().requires_grad_(x.requires_grad)


def _fresh(inputs):
    return [x.detach().clone().requires_grad_(x.requires_grad) for x in inputs]


def _check(program, compiled, reference, inputs) -> tuple[int, str]:
    """(exit status, verdict) of one step of the compiled program against
    eager's from the same parameters, a float64 step judging float32
    differences of summation order."""
    loss_fn = _loss(program)
    module = program.fn if isinstance(program.fn, torch.nn.Module) else None
    wide_model = copy.deepcopy(reference)
    actual_inputs, expected_inputs = _fresh(inputs), _fresh(inputs)
    try:
        expected = _results(reference, expected_inputs, step(reference, expected_inputs, loss_fn))
    except TircError:
        raise
    except Exception as err:
        raise TircError(
            f"--check: eager PyTorch raises on the training step: {type(err).__name__}: {first_line(err)}"
        ) from None
    actual = _results(module, actual_inputs, step(compiled, actual_inputs, loss_fn))
    if list(actual) != list(expected):
        missing = ", ".join(sorted(set(expected) ^ set(actual)))
        return EXIT_MISMATCH, f"mismatch against eager PyTorch: results differ in kind: {missing}"

    def float64():
        wide_inputs = [_wide(x) for x in inputs]
        model = wide_model.double() if isinstance(wide_model, torch.nn.Module) else wide_model
        return list(_results(model, wide_inputs, step(model, wide_inputs, loss_fn)).values())

    names = list(actual)
    mismatch = compare_outputs(list(actual.values()), list(expected.values()), float64)
    if mismatch is None:
        return EXIT_OK, f"ok: the training step matches eager PyTorch ({len(names)} results)"
    detail = mismatch.message.partition(": ")[2]
    return EXIT_MISMATCH, f"mismatch against eager PyTorch: {names[mismatch.output]}: {detail}"
