"""`tirc.compile(..., train=True)`: the program traced once, then its
forward and backward graphs through AOTAutograd and tirc (training.py), and
the callable that runs them with the module's parameters and buffers."""

from __future__ import annotations

import torch

from ir_text import TircError

from .training import GraphCompiler, Partition, aot_compile


def check_training_inputs(example_inputs) -> None:
    if not any(isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs):
        raise TircError("train=True: nothing requires a gradient (no parameter or input has requires_grad)")


class TrainingProgram:
    """`tirc.compile(..., train=True)`'s callable: the program's forward
    through autograd, with the module's parameters and buffers as they are
    at each call (so gradients reach them, and batch norm's statistics are
    updated in them), and the program's output structure."""

    def __init__(self, run, root, state_names: list[str], out_spec, arity: int, graphs: GraphCompiler):
        self._run = run
        self._root = root
        self._state_names = state_names
        self._out_spec = out_spec
        self._arity = arity
        self.graphs = graphs

    def _state(self) -> list[torch.Tensor]:
        if self._root is None:
            return []
        tensors = dict(self._root.named_parameters())
        tensors.update(self._root.named_buffers())
        return [tensors[name] for name in self._state_names]

    def __call__(self, *inputs):
        if len(inputs) != self._arity:
            raise TypeError(f"the compiled program takes {self._arity} input tensor(s), got {len(inputs)}")
        flat = self._run(*self._state(), *inputs)
        return torch.utils._pytree.tree_unflatten(list(flat), self._out_spec)

    @property
    def partition(self) -> Partition:
        return self.graphs.partition

    @property
    def forward_program(self):
        return self.graphs.programs.get("forward")

    @property
    def backward_program(self):
        return self.graphs.programs.get("backward")


def compile_training(
    model_or_fn,
    example_inputs,
    options,
    name: str,
    path,
    stages,
    dump_dir,
    report: bool = False,
    verbose: bool = False,
) -> TrainingProgram:
    """`tirc.compile(..., train=True)`: the program traced once (fake
    tensors, with the user's source lines), then AOTAutograd's forward and
    backward graphs of it: the forward compiled now, the backward at the
    first `backward()`."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from lowering import input_names

    from lowering import check_tensors

    check_tensors(example_inputs)
    root = model_or_fn if isinstance(model_or_fn, torch.nn.Module) else None
    state = (list(root.named_parameters()) + list(root.named_buffers())) if root is not None else []
    state_names = [n for n, _ in state]
    state_tensors = [t for _, t in state]
    check_training_inputs(state_tensors + example_inputs)
    specs = []

    def flat_program(*args):
        if root is not None:
            held = dict(zip(state_names, args[: len(state)]))
            result = torch.func.functional_call(root, held, tuple(args[len(state) :]))
        else:
            result = model_or_fn(*args)
        flat, spec = torch.utils._pytree.tree_flatten(result)
        if not all(isinstance(leaf, torch.Tensor) for leaf in flat):
            raise TircError(
                "train=True: the program must return tensors (a tensor, or a tuple or list of them)"
            )
        specs.append(spec)
        return flat

    try:
        gm = make_fx(
            flat_program, tracing_mode="fake", record_stack_traces=True, _allow_non_fake_inputs=True
        )(*state_tensors, *example_inputs)
    except TircError:
        raise
    except Exception as err:
        raise TircError(f"tracing failed: {type(err).__name__}: {str(err).strip().splitlines()[0]}") from None
    primals = state_names + input_names(model_or_fn, root, len(example_inputs))
    graphs = GraphCompiler(options, name, path, stages, dump_dir, primals, report, verbose)
    run = aot_compile(gm, state_tensors + example_inputs, graphs)
    return TrainingProgram(run, root, state_names, specs[-1], len(example_inputs), graphs)
