"""Capture's front ends: a callable and example inputs -> a capture-stage Module
of core ATen ops.

Two front ends meet in one FX-graph converter (`fx_convert._convert`):
- make_fx traces a function or nn.Module with the core-ATen decomposition
  table (capture_decompositions), functionalized (no in-place ops); a
  module's parameters and buffers are lifted to inputs so the dump is
  self-contained;
- a torch.export program (`ExportedProgram`, e.g. from a `.pt2` file) is
  decomposed with the same table; its graph signature names the lifted
  parameters, buffers and constants, the input mutations and the user outputs.
Every op keeps the user's source line from the FX stack trace (capture_locations).
"""

from __future__ import annotations

import contextlib
import inspect
import re
import types
import warnings
from dataclasses import dataclass

import torch
from torch.export.graph_signature import InputKind, OutputKind
from torch.fx.experimental.proxy_tensor import make_fx

from ir_text import first_line, quiet_fake_tensors, TircError, storage_span

from .capture_decompositions import _decompositions
from .capture_locations import _exported_loc, _source_locator, _traceback_loc
from .fx_convert import _convert, _mutates, _update


def input_names(fn, module: torch.nn.Module | None, count: int) -> list[str]:
    """Readable names for the example inputs, from the forward signature."""
    target = module.forward if module is not None else fn
    try:
        params = [
            p.name
            for p in inspect.signature(target).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        params = []
    names = params[:count] if len(params) >= count else []
    return names or [f"arg{k}" for k in range(count)]


def _check_tensors(inputs, what: str = "input") -> None:
    for k, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            raise TircError(f"{what} {k} is a {type(x).__name__}; tirc takes tensor inputs")
        if x.layout != torch.strided:
            raise TircError(
                f"{what} {k} is a {str(x.layout).removeprefix('torch.')} tensor; tirc takes dense (strided) tensors"
            )
        if x.device.type == "meta":
            raise TircError(
                f"{what} {k} is on the meta device (it has no values); tirc takes CPU or CUDA tensors"
            )


@dataclass(frozen=True)
class OutputSpec:
    """How the program's outputs are rebuilt from the graph's: the pytree
    spec of what the program returns, and the flat positions of its None
    leaves, which the graph does not return."""

    tree: object
    nones: tuple[int, ...] = ()

    def rebuild(self, flat) -> list:
        """The flat leaves of the program's outputs, the Nones put back."""
        if not self.nones:
            return flat
        leaves, values = [], iter(flat)
        for k in range(self.tree.num_leaves):
            leaves.append(None if k in self.nones else next(values))
        return leaves


def capture(fn, example_inputs, source: str, source_path: str | None, options_pairs, names=None, locate=None):
    """Trace `fn` (a function, an nn.Module or a torch.export ExportedProgram)
    on `example_inputs` into a capture Module.

    `names` name the inputs (default: the forward's parameters); `locate`
    maps an FX node to its `loc(...)` (default: its innermost frame in the
    program's own file, `source_path`).

    Returns (module, lifted, out_spec): the module, the (name, tensor) pairs of
    parameters and buffers that lead its inputs, and the OutputSpec that
    rebuilds the program's output structure from the flat outputs.
    """
    if isinstance(fn, torch.export.ExportedProgram):
        return capture_exported(fn, example_inputs, source, options_pairs)
    module = fn if isinstance(fn, torch.nn.Module) else None
    example_inputs = list(example_inputs)
    _check_tensors(example_inputs)
    names = list(names) if names is not None else input_names(fn, module, len(example_inputs))
    lifted: list[tuple[str, torch.Tensor]] = []
    if module is not None:
        lifted = list(module.named_parameters()) + list(module.named_buffers())
        flat_fn = _lifted_call(module, [n for n, _ in lifted])
        all_inputs = [t.detach() for _, t in lifted] + example_inputs
        all_names = [n for n, _ in lifted] + names
    else:
        flat_fn, all_inputs, all_names = _as_forward(fn), example_inputs, names
    specs = []

    def flat_outputs(*args):
        # None leaves (a function that only updates its inputs, `return x,
        # None`) are no outputs of the graph; the caller puts them back.
        flat, spec = torch.utils._pytree.tree_flatten(flat_fn(*args))
        specs.append(OutputSpec(spec, tuple(k for k, leaf in enumerate(flat) if leaf is None)))
        return [leaf for leaf in flat if leaf is not None]

    try:
        gm, all_inputs = _trace(flat_outputs, all_inputs)
        if any(_mutates_an_intermediate(node) for node in gm.graph.nodes):
            gm = _refunctionalize(gm, all_inputs)
    except TircError:
        raise
    except Exception as err:
        raise _tracing_error(err, source, source_path) from None
    constants = _lift_constants(gm, all_inputs)
    lifted = constants + lifted
    all_inputs = [t for _, t in constants] + all_inputs
    all_names = [n for n, _ in constants] + all_names
    graph = _convert(gm, all_inputs, all_names, locate or _source_locator(source, source_path))
    return graph.module(source, options_pairs), lifted, specs[-1]


def _trace(flat_fn, inputs):
    """make_fx of `flat_fn`, functionalized, on stand-ins for `inputs`:
    returns (graph module, the tensors it was traced on).

    Fake tensors first: nothing is computed, so a large graph traces in a
    fraction of the time (measured: docs/design-notes.md, "Lowering");
    a real tensor the program holds (a closure's) becomes a constant. What
    fake tensors cannot trace (an op without a meta kernel) or trace only to
    a value tirc cannot take (`.item()`) is traced again on real copies,
    which runs it: the error is then PyTorch's own for a traced program, and
    a program that reads values is refused as it always was. Either way each
    input gets storage of its own: the caller's tensors (and a module's
    buffers) are never updated, and the same tensor passed twice traces as
    two inputs.
    """
    # In-place ops become their functional forms, and a mutated input ends
    # in a copy_ back into it (an `update` line).
    functional = torch.func.functionalize(flat_fn, remove="mutations")
    with torch.no_grad(), _without_vendor_kernels(_on_cuda(inputs)):
        blanks = [_blank(x) for x in inputs]
        try:
            with quiet_fake_tensors():
                gm = make_fx(
                    functional,
                    decomposition_table=_decompositions(),
                    tracing_mode="fake",
                    _allow_non_fake_inputs=True,
                    record_stack_traces=True,
                )(*blanks)
            if not any(node.target is torch.ops.aten._local_scalar_dense.default for node in gm.graph.nodes):
                return gm, blanks
        except Exception:
            pass
        copies = [copy_with_layout(x) for x in inputs]
        trace = make_fx(functional, decomposition_table=_decompositions(), record_stack_traces=True)
        return trace(*copies), copies


def _mutates_an_intermediate(node) -> bool:
    """An in-place op that a decomposition emitted below functionalization
    (the copy_ back into an input that functionalization writes is expected)."""
    if node.op != "call_function" or not _mutates(node.target):
        return False
    return not (node.target is torch.ops.aten.copy_.default and node.args[0].op == "placeholder")


def _refunctionalize(gm, inputs):
    """Trace the traced graph again through functionalization, so in-place ops
    of decompositions (writes into views of `empty`, say, as circular padding
    does) become functional scatters. The nodes keep their stack traces."""
    import torch.fx.traceback as fx_traceback

    def run(*args):
        return torch.fx.Interpreter(gm).run(*args)

    with torch.no_grad(), _without_vendor_kernels(_on_cuda(inputs)), fx_traceback.preserve_node_meta():
        functional = torch.func.functionalize(run, remove="mutations")
        # No decompositions this time: the graph is core ATen already (and
        # core's slice_scatter decomposition mis-sizes some negative pads).
        # Fake tensors: `inputs` may be blanks (see `_trace`), and the graph
        # reads no values, as it traced once already.
        return make_fx(functional, tracing_mode="fake", record_stack_traces=True)(*inputs)


def _on_cuda(inputs) -> bool:
    return any(isinstance(x, torch.Tensor) and x.is_cuda for x in inputs)


@contextlib.contextmanager
def _without_vendor_kernels(cuda: bool):
    """mkldnn and cuDNN off while tracing: recurrent layers then trace to
    matmuls and pointwise ops. (With mkldnn, fake and meta tensors disagree
    on its results; with cuDNN, nn.LSTM's forward flattens its weights into
    one storage, which tracing cannot follow.) cuDNN's and flash attention
    too, for a program on the GPU (`cuda`): their CUDA ops return sequence
    lengths as ints, which tirc cannot hold (a bf16 GPT-NeoX block failed to
    capture), so scaled_dot_product_attention traces to the memory-efficient
    or math form there; on the CPU flash attention is one op of tensors. mkldnn's flags() also toggles a TF32 setting that warns
    on builds without Intel GPU support, which is noise here."""
    flags = [torch.backends.mkldnn.flags(enabled=False), torch.backends.cudnn.flags(enabled=False)]
    attention = torch.backends.cuda.cudnn_sdp_enabled(), torch.backends.cuda.flash_sdp_enabled()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for flag in flags:
            flag.__enter__()
    torch.backends.cuda.enable_cudnn_sdp(False)
    torch.backends.cuda.enable_flash_sdp(attention[1] and not cuda)
    try:
        yield
    finally:
        torch.backends.cuda.enable_cudnn_sdp(attention[0])
        torch.backends.cuda.enable_flash_sdp(attention[1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for flag in reversed(flags):
                flag.__exit__(None, None, None)


def _lift_constants(gm, inputs: list[torch.Tensor]) -> list[tuple[str, torch.Tensor]]:
    """Tensors the traced graph holds as attributes (a closure's tensor, a
    `torch.tensor(...)` built in forward) become leading inputs, as parameters
    do, so the dump stays self-contained: (name, tensor) pairs, in graph order.

    A 0-d constant on the CPU in a program of GPU tensors (`y[:, 0] = 0.0`
    traces to one) is a scalar to ATen, which takes it beside tensors of any
    device; tirc's kernels read it from the program's device, so it moves there."""
    devices = {x.device for x in inputs if x.device.type != "cpu"}
    device = next(iter(devices)) if len(devices) == 1 else None
    graph = gm.graph
    first = next(iter(graph.nodes), None)
    constants = []
    for node in list(graph.nodes):
        if node.op != "get_attr":
            continue
        tensor = getattr(gm, node.target)
        if not isinstance(tensor, torch.Tensor):
            raise TircError(f"the traced graph holds '{node.target}', a {type(tensor).__name__}")
        with graph.inserting_before(first):
            placeholder = graph.placeholder(node.target)
        placeholder.meta = dict(node.meta)
        node.replace_all_uses_with(placeholder)
        graph.erase_node(node)
        tensor = tensor.detach()
        if device is not None and tensor.dim() == 0 and tensor.device.type == "cpu":
            tensor = tensor.to(device)
        constants.append((node.target, tensor))
    return constants


_STATE_KINDS = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)
_MUTATION_KINDS = (OutputKind.BUFFER_MUTATION, OutputKind.PARAMETER_MUTATION, OutputKind.USER_INPUT_MUTATION)


def capture_exported(ep, example_inputs, source: str, options_pairs):
    """A torch.export program -> a capture Module (as `capture` returns).

    Parameters, buffers and constant tensors become the leading inputs, named
    after their attribute paths (`%lin.weight`); the user inputs follow.
    Mutated inputs become `update` lines.
    """
    try:
        with warnings.catch_warnings():
            # torch's deprecation notices from inside torch.export, not the user's business.
            warnings.simplefilter("ignore", FutureWarning)
            ep = ep.run_decompositions(_decompositions())
    except Exception as err:
        raise TircError(
            f"decomposing the exported program failed: {type(err).__name__}: {first_line(err)}"
        ) from None
    lifted, names, tensors = _exported_inputs(ep, list(example_inputs))
    graph = _convert(ep.graph_module, tensors, names, _exported_loc)
    # The graph returns the new values of mutated inputs, then the user outputs.
    # A mutation names a user input by its argument name, state by its target.
    position = {}
    for k, spec in enumerate(ep.graph_signature.input_specs):
        position[spec.kind == InputKind.USER_INPUT, spec.target or spec.arg.name] = k
    outputs = []
    for spec, value in zip(ep.graph_signature.output_specs, graph.outputs):
        if spec.kind in (OutputKind.USER_OUTPUT, OutputKind.LOSS_OUTPUT):
            outputs.append(value)
        elif spec.kind in _MUTATION_KINDS:
            k = position[spec.kind == OutputKind.USER_INPUT_MUTATION, spec.target]
            graph.updates.append(_update(graph, graph.inputs[k].value, value))
        else:
            raise TircError(f"the exported program has a {_kind(spec)} output, which tirc does not support")
    graph.outputs = outputs
    return graph.module(source, options_pairs), lifted, OutputSpec(ep.call_spec.out_spec)


def _kind(spec) -> str:
    return spec.kind.name.lower().replace("_", " ")


def _exported_inputs(ep, example_inputs):
    """(lifted, names, tensors) of an exported program's graph inputs: its
    state (parameters, buffers, constant tensors), then the user inputs."""
    _check_tensors(example_inputs, "user input")
    specs = ep.graph_signature.input_specs
    users = [s for s in specs if s.kind == InputKind.USER_INPUT]
    if len(users) != len(example_inputs):
        raise TircError(f"the exported program takes {len(users)} tensor input(s), got {len(example_inputs)}")
    state = specs[: len(specs) - len(users)]
    bad = next((s for s in state if s.kind not in _STATE_KINDS), None)
    if bad is not None:
        raise TircError(f"the exported program has a {_kind(bad)} input, which tirc does not support")
    lifted = []
    for spec in state:
        tensor = ep.state_dict.get(spec.target, ep.constants.get(spec.target))
        if not isinstance(tensor, torch.Tensor):
            raise TircError(f"the exported program's constant '{spec.target}' is not a tensor")
        lifted.append((spec.target, tensor))
    for node in ep.graph.nodes:
        val = node.meta.get("val")
        if node.op == "placeholder" and isinstance(val, torch.Tensor) and not _is_static(val):
            raise TircError(
                f"input '{node.name}' has a dynamic shape; tirc compiles static shapes "
                "(export without dynamic_shapes)"
            )
    names = [n for n, _ in lifted] + [s.arg.name for s in users]
    return lifted, names, [t.detach() for _, t in lifted] + example_inputs


def _is_static(tensor: torch.Tensor) -> bool:
    return all(isinstance(s, int) for s in (*tensor.shape, *tensor.stride()))


def _blank(x: torch.Tensor) -> torch.Tensor:
    """A tensor like `x` (shape, strides, even overlapping ones, dtype,
    device) with storage of its own and its contents not set: fake tracing
    reads only its metadata."""
    return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)


def copy_with_layout(x: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
    """A copy of `x` (in `dtype`) with its own storage and the same strides,
    even overlapping (a broadcast 0) or with gaps (a slice), where `clone`
    and `to` give a contiguous tensor."""
    flat = x.detach().as_strided((storage_span(x.shape, x.stride()),), (1,)).to(dtype or x.dtype, copy=True)
    return flat.as_strided(x.shape, x.stride())


def _as_forward(fn):
    """`fn` with its code named `forward`: make_fx keeps only stack frames of
    functions named `forward`, so this keeps a plain function's source lines
    (as a module's forward keeps its own)."""
    if not isinstance(fn, types.FunctionType):
        return fn
    renamed = types.FunctionType(
        fn.__code__.replace(co_name="forward"), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__
    )
    renamed.__kwdefaults__ = fn.__kwdefaults__
    return renamed


def _tracing_error(err: Exception, source: str, source_path: str | None) -> TircError:
    """The error for a program that does not trace, at the user's innermost
    line in the traceback. A program that reads a tensor's value (`.item()`,
    a tensor in an `if`) is named as such, instead of make_fx's advice on
    its tracing modes, which is not the user's to take."""
    loc = _traceback_loc(err.__traceback__, source, source_path)
    if "_local_scalar_dense" in str(err) or "data-dependent" in str(err):
        message = (
            "the program reads a tensor's value (`.item()`, a tensor in an `if` or a "
            "Python number made from a tensor); tirc compiles programs whose control "
            "flow does not depend on the data"
        )
    elif "mutating a non-functional tensor with a functional tensor" in str(err):
        message = (
            "the program updates in place a tensor that is not one of its inputs (a closure's, "
            "or a module attribute that is not a registered buffer); pass it as an input or "
            "register it as a buffer"
        )
    elif "custom (non-ATen) operator whose output has alias annotations" in str(err):
        op = re.search(r"aten::(__i\w+__)", str(err))
        message = (
            f"an augmented assignment on a tensor ({op.group(1) if op else 'a |= b'}) does not trace; "
            "write `a = a | b` (or `&`, `^`, `<<`, `>>`) or `a.bitwise_or_(b)`"
        )
    else:
        message = f"tracing failed: {type(err).__name__}: {first_line(err)}"
    return TircError(message, loc.file if loc else None, loc.line if loc else None)


def _lifted_call(module: torch.nn.Module, state_names: list[str]):
    """The module's forward over (parameters and buffers, inputs). A forward
    that assigns a parameter or buffer a new tensor (`self.count = self.count
    + 1`) is refused: functional_call puts the original back after the call,
    so the new value would be lost without a word. In-place updates
    (`self.count.add_(1)`, as batch norm's) become `update` lines."""

    def call(*flat):
        state = dict(zip(state_names, flat[: len(state_names)]))

        def check_state(mod, args, output):
            for name, tensor in state.items():
                path, _, attr = name.rpartition(".")
                if getattr(module.get_submodule(path), attr, None) is not tensor:
                    raise TircError(
                        f"forward assigns a new value to {name!r} (`self.{attr} = ...`); tirc follows "
                        f"in-place updates of parameters and buffers (`self.{attr}.add_(1)`, "
                        "`.copy_(...)`), not assignments"
                    )

        hook = module.register_forward_hook(check_state)
        try:
            return torch.func.functional_call(module, state, tuple(flat[len(state_names) :]))
        finally:
            hook.remove()

    return call
