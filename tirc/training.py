"""Training: a forward and a backward graph, each compiled by tirc.

AOTAutograd (torch's public `aot_module_simplified`) traces the joint
forward/backward graph of a program, decomposed with capture's table, and
the min-cut partitioner (Inductor's) splits it: the forward returns the
program's outputs and the values the backward needs (the *saved* values),
recomputing in the backward what is cheaper to recompute than to keep.
Each graph then goes through tirc's whole pipeline as a program of its own:
its inputs are the primals (parameters, buffers, the user's inputs) for the
forward, the saved values and the outputs' gradients (`tangents_N`) for the
backward. Autograd calls the compiled graphs: the outputs of a training
program support `backward()`, and gradients reach `.grad` as in eager.

The forward is compiled when AOTAutograd hands it over; the backward at its
first call (the first `backward()`), for the tensors it is given then, so
that their strides and devices are those tirc's forward made.

Graphs are called in AOTAutograd's boxed convention: the compiled function
takes the list of its inputs and empties it, so the saved activations the
backward is given are held by the generated code alone, which frees each
after its last use (the memplan's `free` lines; the `free_inputs` option).

With dumps, each graph writes its stages into a directory of its own
(`DIR/forward/01-capture.tir`, ..., `DIR/backward/...`), and `DIR/manifest.json`
records the partition: the saved values, with their sizes.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import torch


from .dumps import write_atomic
from .timings import Timings

# The graphs a training compile makes, in the order they are compiled.
GRAPHS = ("forward", "backward")


@dataclass(frozen=True)
class SavedValue:
    """A value the forward returns for the backward."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    bytes: int

    def as_json(self) -> dict:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype, "bytes": self.bytes}


@dataclass
class Partition:
    """What the partitioner decided: the forward's user outputs and the
    values saved for the backward (known once the backward is compiled)."""

    outputs: int = 0
    saved: list[SavedValue] = field(default_factory=list)

    @property
    def saved_bytes(self) -> int:
        return sum(v.bytes for v in self.saved)


def saved_values(gm: torch.fx.GraphModule, primals: list[str], inputs: list) -> list[SavedValue]:
    """The backward graph's inputs that the forward saved (all but the
    outputs' gradients, `tangents_N`), named as in the backward's dump, as
    the tensors `inputs` it is called with are."""
    saved = []
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, name, value in zip(placeholders, graph_input_names(gm, primals), inputs):
        if node.name.startswith("tangents"):
            continue
        size = math.prod(value.shape) * value.element_size()
        saved.append(SavedValue(name, tuple(value.shape), str(value.dtype).removeprefix("torch."), size))
    return saved


def aot_compile(gm, example_inputs, compile_graph):
    """`gm` (an FX graph of torch ops) for training: AOTAutograd's forward and
    backward graphs, each given to `compile_graph(kind, graph, inputs)`
    ("forward", "backward", or "inference" when nothing needs a gradient),
    which returns a callable of the graph's inputs."""
    from torch._functorch.aot_autograd import aot_module_simplified
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    from lowering import decompositions, without_vendor_kernels

    def compiler(kind):
        def compile_it(graph, inputs):
            return _boxed(compile_graph(kind, graph, inputs))

        return compile_it

    # The joint graph is traced with the vendor kernels capture avoids (cuDNN,
    # flash attention on the GPU: ops with integer results tirc cannot hold).
    cuda = any(getattr(x, "is_cuda", False) for x in example_inputs)
    with without_vendor_kernels(cuda):
        return aot_module_simplified(
            gm,
            example_inputs,
            fw_compiler=compiler("forward"),
            bw_compiler=compiler("backward"),
            inference_compiler=compiler("inference"),
            partition_fn=min_cut_rematerialization_partition,
            decompositions=decompositions(),
            keep_inference_input_mutations=True,
        )


class AtFirstCall:
    """A graph compiled at its first call, for the tensors it is given then
    (`compile_for(inputs)`): the backward. Its inputs are the forward's
    outputs as tirc computed them: their strides (a channels-last forward's
    activations) and devices (attention's random-number state, a CPU tensor
    beside CUDA ones, which the fake tensors AOTAutograd describes them
    with place on the GPU) are what the backward is compiled for."""

    def __init__(self, compile_for):
        self._compile_for = compile_for
        self.program = None

    def call_boxed(self, inputs: list):
        if self.program is None:
            self.program = self._compile_for(list(inputs))
        return self.program.call_boxed(inputs)


def _boxed(program):
    """`program` in AOTAutograd's boxed convention: called with the list of
    its inputs, which it empties, so that it holds the only references."""

    boxed = getattr(program, "call_boxed", None)

    def call(args):
        inputs = list(args)
        args.clear()
        return boxed(inputs) if boxed is not None else program(*inputs)

    call._boxed_call = True
    return call


def graph_function(gm: torch.fx.GraphModule):
    """A function that runs `gm` node by node with each node's metadata
    current, so that capture's trace of it keeps the stack traces (the
    user's source lines) AOTAutograd copied onto the nodes."""
    import torch.fx.traceback as fx_traceback

    def forward(*args):
        with fx_traceback.preserve_node_meta():
            return torch.fx.Interpreter(gm).run(*args)

    return forward


def graph_input_names(gm: torch.fx.GraphModule, primals: list[str]) -> list[str]:
    """Names for a graph's inputs: `primals_K` is the K-th of `primals` (the
    program's own input names), the others keep their node names."""
    names = []
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        k = _primal_index(node.name)
        names.append(primals[k] if k is not None and k < len(primals) else node.name)
    return names


def _primal_index(name: str) -> int | None:
    prefix, _, number = name.rpartition("_")
    if prefix == "primals" and number.isdigit():
        return int(number) - 1
    return None


def write_training_manifest(directory: Path, source: str, partition: Partition, peaks: dict) -> None:
    """DIR/manifest.json of a training compile: the graphs' directories, the
    partition, and the step's peak memory as the memory plans give it."""
    manifest = {
        "source": source,
        "training": {
            "graphs": [kind for kind in GRAPHS if kind in peaks],
            "forward_outputs": partition.outputs,
            "saved": [v.as_json() for v in partition.saved],
            "saved_bytes": partition.saved_bytes,
            "peak_bytes": _step_peak(partition, peaks),
        },
    }
    write_atomic(directory / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def _step_peak(partition: Partition, peaks: dict) -> dict:
    """Bytes live at the peak of a training step, by the memory plans: the
    forward's peak (its saved values are among its outputs), and the
    backward's, which is given the saved values and frees them as it goes."""
    out = {kind: peaks[kind] for kind in GRAPHS if kind in peaks}
    if out:
        out["step"] = max(out.values())
    return out


class GraphCompiler:
    """Compiles each graph AOTAutograd hands over with tirc, as a program of
    its own (its dumps in `dump_dir/KIND`), and records the partition and
    the memory plans' peaks for the training manifest."""

    def __init__(
        self,
        options,
        name: str,
        path,
        stages,
        dump_dir,
        primals: list[str],
        report: bool = False,
        verbose: bool = False,
        sources: list[str] | None = None,
    ):
        self.options = options
        self.sources = sources or ([path] if path else None)  # the user's files the report shows
        self.verbose = verbose  # whether each stage of each graph's compile is printed (`-v`)
        self.report = report  # whether DIR/report.html is written after each graph's compile
        self.name = name
        self.path = path
        self.stages = stages
        self.dump_dir = Path(dump_dir) if dump_dir is not None else None
        self.primals = primals
        self.partition = Partition()
        self.forward_outputs = 0  # the forward graph's: the program's outputs, then the saved values
        self.peaks: dict[str, int] = {}
        self.programs: dict[str, object] = {}

    def __call__(self, kind: str, gm: torch.fx.GraphModule, example_inputs):
        from .dynamo import _is_static, _PerShape, _real

        if not all(_is_static(x) for x in example_inputs):
            # Symbolic sizes (Dynamo's dynamic shapes): compiled at each call,
            # once per set of concrete sizes, as an inference graph is.
            from .graph_dumps import GraphDumps

            pairs = {k: v for k, v in self.options.to_pairs() if k != "backend"}
            directory = self.dump_dir / kind if self.dump_dir is not None else None
            dumps = GraphDumps(directory, frozenset(self.stages or ()), self.report)
            return _PerShape(gm, self.options.backend, pairs, dumps=dumps)
        if kind == "backward":
            return AtFirstCall(lambda inputs: self._compile(kind, gm, inputs))
        return self._compile(kind, gm, [_real(x, k) for k, x in enumerate(example_inputs)])

    def _compile(self, kind: str, gm: torch.fx.GraphModule, inputs: list):
        from scheduler import peak_memory

        if kind == "backward":
            self.partition.saved = saved_values(gm, self.primals, inputs)
            self.partition.outputs = self.forward_outputs - len(self.partition.saved)
        # Outside AOTAutograd's tracing context and fake mode: the compile
        # makes real tensors (the launch tuner's scratch buffers, which a
        # fake mode would hand to the GPU as pointers to nothing).
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        with torch._guards.tracing(None), unset_fake_temporarily():
            program = self._compile_graph(kind, gm, inputs)
        self.programs[kind] = program
        module = program.compiled.module
        if module.stage == "memplan":
            self.peaks[kind] = peak_memory(module)
        if kind == "forward":
            self.forward_outputs = len(_graph_outputs(gm))
        if self.dump_dir is not None and self.stages and kind in GRAPHS:
            self._manifest()
            if self.report:
                from .report import write_report

                write_report(self.dump_dir, sources=self.sources)
        return program

    def _compile_graph(self, kind: str, gm: torch.fx.GraphModule, inputs: list):
        from lowering import graph_locator

        from .api import compile_program

        return compile_program(
            graph_function(gm),
            inputs,
            self._graph_options(),
            self.name,
            self.path,
            self.stages,
            self.dump_dir / kind if self.dump_dir is not None else None,
            names=graph_input_names(gm, self.primals),
            locate=graph_locator(self.name, self.path),
            progress=Timings.for_stderr(self.verbose, label=f"{kind}: "),
        )

    def _graph_options(self):
        """The graph's options: it owns its inputs (AOTAutograd's boxed
        call), and replays no CUDA graph, whose static copies of inputs and
        outputs would hold memory the step's peak would then count."""
        return dataclasses.replace(self.options, free_inputs=True, cuda_graphs=False)

    def _manifest(self) -> None:
        write_training_manifest(self.dump_dir, self.name, self.partition, self.peaks)


def _graph_outputs(gm: torch.fx.GraphModule) -> list:
    (output,) = [n for n in gm.graph.nodes if n.op == "output"]
    return list(torch.utils._pytree.tree_leaves(output.args[0]))
