"""`torch.compile(model, backend="tirc")`: Dynamo hands over an FX graph of
torch-level ops; tirc captures it to core ATen and compiles it.

Each graph Dynamo makes (one per graph break) is compiled on its own. Dynamo
may describe the inputs with FakeTensors: tirc traces on real tensors, so a
fake input is replaced by a seeded random tensor of its shape, strides and
dtype (tracing does not depend on the values). Dynamo guards on strides: an
input laid out otherwise (transposed, channels-last) makes it hand over the
graph again, compiled for that layout (a compiled program given other
strides would copy the input into its layout). tirc compiles static shapes:
a graph with symbolic sizes (Dynamo's automatic dynamic shapes, after a call
with new sizes) is compiled at its first call for each set of concrete sizes.
A Python float that changed between calls reaches the graph as a 0-d tensor
that the graph reads (`.item()`): such a graph is compiled once per value.
Compiles per graph are bounded (SPECIALIZATION_LIMIT, as Dynamo's own
recompile limit): later sizes or values run the graph eagerly, with one
warning, instead of compiling on every call.

A graph called with autograd on and an input that requires a gradient (a
parameter, as Dynamo passes them) is compiled for training
(tirc/training.py): AOTAutograd's forward and backward graphs, each by
tirc, the backward at the first `backward()`.
"""

from __future__ import annotations

import warnings

import torch

from codegen import random_input
from lowering import graph_source_files

from .graph_dumps import GraphDumps, graph_dumps, named_reproducer
from .training import graph_function

# The program name in the headers of the graphs torch.compile hands over.
SOURCE = "dynamo_graph"
# Distinct sizes and values one graph is compiled for; later ones run eagerly.
SPECIALIZATION_LIMIT = 8


def tirc_backend(gm: torch.fx.GraphModule, example_inputs, **kwargs):
    options = dict(kwargs.get("options") or {})
    dumps = graph_dumps(options)  # the dump keys, out of the compiler's options
    # The device's backend unless named: Triton for CUDA tensors, else C++.
    cuda = any(getattr(x, "is_cuda", False) for x in example_inputs)
    backend = options.pop("backend", "triton" if cuda else "cpp")
    try:
        if torch.is_grad_enabled() and any(getattr(x, "requires_grad", False) for x in example_inputs):
            return _train(gm, example_inputs, backend, options, dumps)
        read = _read_inputs(gm)
        if all(_is_static(x) for x in example_inputs) and not read:
            inputs = [_real(x, k) for k, x in enumerate(example_inputs)]
            sources = graph_source_files(gm) if dumps.report else None
            return _compile(graph_function(gm), inputs, backend, options, dumps, _placeholders(gm), sources)
        return _PerShape(gm, backend, options, read, dumps)
    except Exception as err:
        # Dynamo shows only the message of what a backend raises: it names the reproducer.
        crash = named_reproducer(err)
        if crash is err:
            raise
        raise crash from err


# How a graph reads a tensor's value as a Python number.
_READS = {("call_method", "item"), ("call_function", torch.ops.aten._local_scalar_dense.default)}


def _read_inputs(gm: torch.fx.GraphModule) -> frozenset[int]:
    """The positions of the inputs whose value the graph reads (`.item()`):
    a Python float that changed between calls, which Dynamo then passes as a
    0-d tensor. tirc compiles such a graph once per value (it is a constant
    of the compiled program), where Inductor would pass it to its kernels."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    return frozenset(
        k for k, node in enumerate(placeholders) if any((u.op, u.target) in _READS for u in node.users)
    )


def _train(gm: torch.fx.GraphModule, example_inputs, backend: str, options: dict, dumps: GraphDumps):
    """The graph for training: AOTAutograd's forward and backward graphs,
    each compiled by tirc, its inputs named as Dynamo's placeholders."""
    from .options import Options
    from .training import GraphCompiler, aot_compile

    cuda = any(getattr(x, "is_cuda", False) for x in example_inputs)
    pairs = {**options, "backend": backend, "device": "cuda" if cuda else "cpu"}
    opts = Options.from_pairs(sorted(pairs.items()))
    primals = [n.name for n in gm.graph.nodes if n.op == "placeholder"]

    def graphs(dumps: GraphDumps):
        sources = graph_source_files(gm) if dumps.report else None
        return GraphCompiler(
            opts, SOURCE, None, dumps.stages, dumps.directory, primals, report=dumps.report, sources=sources
        )

    if not all(_is_static(x) for x in example_inputs):
        return _PerShapeTraining(gm, backend, options, dumps, graphs=graphs)
    return aot_compile(gm, example_inputs, graphs(dumps))


def _compile(fn, inputs, backend: str, options: dict, dumps: GraphDumps, names: list[str], sources=None):
    """Compile `fn`, a graph run node by node (graph_function), for
    `inputs`, named as the graph's placeholders, with the user's source
    lines from its nodes' stack traces (`sources`: their files, for the report)."""
    from lowering import graph_locator

    from .api import compile_program, gc_paused
    from .options import Options

    cuda = any(getattr(x, "is_cuda", False) for x in inputs)
    opts = Options.from_pairs(
        sorted({**options, "backend": backend, "device": "cuda" if cuda else "cpu"}.items())
    )
    # Outside Dynamo's tracing context: make_fx would otherwise trace with
    # Dynamo's fake mode and its symbolic shapes (sym_size nodes for a static
    # graph that refunctionalizes an in-place op on a view).
    with torch._guards.tracing(None), gc_paused():
        return compile_program(
            fn,
            inputs,
            opts,
            SOURCE,
            None,
            dumps.stages,
            dumps.directory,
            names=names,
            locate=graph_locator(SOURCE, None),
            report=dumps.report,
            sources=sources,
        )


def _placeholders(gm: torch.fx.GraphModule) -> list[str]:
    """The names of the graph's inputs (Dynamo's: `l_x_`, `l_self_modules_fc_parameters_weight_`)."""
    return [node.name for node in gm.graph.nodes if node.op == "placeholder"]


def _is_static(x) -> bool:
    return isinstance(x, torch.Tensor) and all(
        isinstance(s, int) for s in (*x.shape, *x.stride(), x.storage_offset())
    )


def _real(x: torch.Tensor, seed: int) -> torch.Tensor:
    """`x` itself, or for a FakeTensor a real tensor laid out as it is."""
    if not isinstance(x, torch._subclasses.fake_tensor.FakeTensor):
        return x
    return random_input(tuple(x.shape), tuple(x.stride()), x.dtype, x.device.type, seed)


class _PerShape:
    """A graph with symbolic sizes, or one that reads inputs' values
    (`read`): compiled at call time, once per set of concrete sizes, strides
    and dtypes, values of its integer inputs and values it reads."""

    def __init__(self, gm: torch.fx.GraphModule, backend: str, options: dict, read=frozenset(), dumps=None):
        self.gm = gm
        self.backend = backend
        self.options = options
        self.read = read
        self.dumps = dumps or GraphDumps()  # each compile's go to `shapeK/` inside the graph's directory
        self.compiled: dict = {}
        self.warned = False

    def _traced(self, k: int, a) -> bool:
        return isinstance(a, torch.Tensor) and k not in self.read

    def __call__(self, *args):
        key = tuple(
            (tuple(a.shape), a.stride(), a.dtype, a.device) if self._traced(k, a) else _value(a)
            for k, a in enumerate(args)
        )
        if key not in self.compiled:
            if len(self.compiled) >= SPECIALIZATION_LIMIT:
                return self._eager(args)
            self.compiled[key] = self._compile(args)
        return self.compiled[key](*[a for k, a in enumerate(args) if self._traced(k, a)])

    def _eager(self, args):
        if not self.warned:
            self.warned = True
            warnings.warn(
                f"tirc: a graph was compiled for {SPECIALIZATION_LIMIT} different input sizes or values "
                "(a Python float that changes on every call?); later ones run eagerly",
                stacklevel=2,
            )
        return self.gm(*args)

    def _specialised(self, args):
        """(the graph as a function of the traced tensors of `args`, those
        tensors): the other arguments (integers, read inputs, held as they
        are: real tensors the trace reads) are its constants."""
        tensors = [k for k, a in enumerate(args) if self._traced(k, a)]
        fixed = [None if self._traced(k, a) else a for k, a in enumerate(args)]

        def specialised(*inputs):
            full = list(fixed)
            for k, x in zip(tensors, inputs):
                full[k] = x
            return run(*full)

        run = graph_function(self.gm)
        return specialised, [args[k] for k in tensors]

    def _shape_dumps(self) -> GraphDumps:
        return self.dumps.inside(f"shape{len(self.compiled)}")

    def _compile(self, args):
        names = [name for k, name in enumerate(_placeholders(self.gm)) if self._traced(k, args[k])]
        sources = graph_source_files(self.gm) if self.dumps.report else None
        dumps = self._shape_dumps()
        return _compile(*self._specialised(args), self.backend, self.options, dumps, names, sources)


def _value(a):
    """A key for an input compiled as a constant: a number, or a tensor's
    dtype and value (`.item()` of a 0-d tensor)."""
    return (a.dtype, a.item()) if isinstance(a, torch.Tensor) else a


class _PerShapeTraining(_PerShape):
    """A training graph with symbolic sizes (Dynamo marks a graph dynamic
    after a call with new sizes, as the last batch of an epoch makes): at
    each new set of concrete sizes, the graph specialised to them is traced
    (fake tensors) and compiled for training as a static one is."""

    def __init__(self, gm, backend: str, options: dict, dumps, graphs):
        super().__init__(gm, backend, options, dumps=dumps)
        self.graphs = graphs

    def _compile(self, args):
        from torch.fx.experimental.proxy_tensor import make_fx

        from .training import aot_compile

        specialised, inputs = self._specialised(args)
        with torch._guards.tracing(None):
            traced = make_fx(
                specialised, tracing_mode="fake", record_stack_traces=True, _allow_non_fake_inputs=True
            )(*inputs)
            return aot_compile(traced, inputs, self.graphs(self._shape_dumps()))
