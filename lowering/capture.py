"""Capture: a callable and example inputs -> a capture-stage Module of core ATen ops.

Two front ends meet in one FX-graph converter (`_convert`):
- make_fx traces a function or nn.Module with the core-ATen decomposition
  table, functionalized (no in-place ops); a module's parameters and buffers
  are lifted to inputs so the dump is self-contained;
- a torch.export program (`ExportedProgram`, e.g. from a `.pt2` file) is
  decomposed with the same table; its graph signature names the lifted
  parameters, buffers and constants, the input mutations and the user outputs.
Every op keeps the user's source line from the FX stack trace.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import operator
import os
import re
import traceback
import types
import warnings
from dataclasses import dataclass, field

import torch
from torch.export.graph_signature import InputKind, OutputKind
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

from ir_text import (
    ENUMS,
    first_line,
    quiet_fake_tensors,
    BufferType,
    Device,
    Enum,
    GraphOp,
    Input,
    Loc,
    Module,
    TensorType,
    TircError,
    Value,
    VERSION,
    from_torch,
    storage_span,
)

from .value_ranges import input_ranges

_ENUM_NAMES = {value: name for name, value in ENUMS.items()}
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_TORCH_DIR = os.path.dirname(os.path.realpath(torch.__file__))


@functools.lru_cache(maxsize=1)
def _decompositions():
    """Core ATen, plus the decompositions Inductor also applies to norms,
    softmax and a few activations, so they lower to reductions and pointwise
    ops (and fuse) instead of running as ATen calls. Built once per process:
    building it costs about 0.1 s (torch materializes its CIA ops)."""
    from torch._decomp import core_aten_decompositions, get_decompositions

    aten = torch.ops.aten
    extra = [
        aten._log_softmax,
        aten.native_layer_norm,
        aten.native_group_norm,
        aten.native_batch_norm,
        aten._native_batch_norm_legit_no_training,
        aten.linalg_vector_norm,
        aten.full_like,
        aten.empty_like,
        aten.mish,
        aten.softplus,
        aten.hardswish,
        aten.hardsigmoid,
        aten.expand_copy,
        aten.std.correction,
        aten.logsumexp,
        aten.upsample_bilinear2d,
    ]
    table = {**core_aten_decompositions(), **get_decompositions(extra)}
    table[aten._native_batch_norm_legit_no_training.default] = _batch_norm_inference
    table[aten.take.default] = _take
    table[aten._softmax.default] = _softmax
    return table


def _softmax(x, dim, half_to_float):
    """Softmax as eager's CPU kernel rounds it: in float32 for halves, exp(x
    - max) times the reciprocal of their sum. The backends compute what the
    IR says and never turn a division into a multiplication themselves:
    `x / x.amax(1, keepdim=True)` must give exactly 1 at the maximum. (Eager's
    CUDA kernels divide instead; the results are within an ulp, and the
    reciprocal costs one rounded division a row where a division per element
    rounded once costs more than the approximate one Triton's `/` is.)"""
    x = x.contiguous()
    result = torch.float32 if half_to_float else x.dtype
    compute = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    x = x.to(compute)
    shifted = x - torch.amax(x, dim, keepdim=True) if x.numel() else x
    unnormalized = torch.exp(shifted)
    return (unnormalized * torch.reciprocal(torch.sum(unnormalized, dim, keepdim=True))).to(result)


def _take(input, index):
    """take as an index of the flattened input; torch's decomposition indexes
    with the index tensor as a Python index, which reads a 0-d index's value."""
    return torch.ops.aten.index.Tensor(input.reshape(-1), [index])


def _batch_norm_inference(input, weight, bias, running_mean, running_var, momentum, eps):
    """Inference batch norm as native_batch_norm with training=False, which the
    table decomposes into pointwise ops. torch's own decomposition goes through
    the in-place `_native_batch_norm_legit`, which torch.export's
    run_decompositions rejects (its graph must stay functional)."""
    return torch.ops.aten.native_batch_norm.default(
        input, weight, bias, running_mean, running_var, False, momentum, eps
    )


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


def _sanitize(name: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.]", "_", name)
    if not name or name.isdigit() or re.fullmatch(r"(buf|ind)\d+", name) or name[0].isdigit():
        name = "arg_" + name
    return name


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


def capture(fn, example_inputs, source: str, source_path: str | None, options_pairs):
    """Trace `fn` (a function, an nn.Module or a torch.export ExportedProgram)
    on `example_inputs` into a capture Module.

    Returns (module, lifted, out_spec): the module, the (name, tensor) pairs of
    parameters and buffers that lead its inputs, and the OutputSpec that
    rebuilds the program's output structure from the flat outputs.
    """
    if isinstance(fn, torch.export.ExportedProgram):
        return capture_exported(fn, example_inputs, source, options_pairs)
    module = fn if isinstance(fn, torch.nn.Module) else None
    example_inputs = list(example_inputs)
    _check_tensors(example_inputs)
    names = input_names(fn, module, len(example_inputs))
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
    graph = _convert(gm, all_inputs, all_names, _source_locator(source, source_path))
    return graph.module(source, options_pairs), lifted, specs[-1]


def _trace(flat_fn, inputs):
    """make_fx of `flat_fn`, functionalized, on stand-ins for `inputs`:
    returns (graph module, the tensors it was traced on).

    Fake tensors first: nothing is computed, so a large graph traces in a
    fraction of the time (cross-entropy at 1024x8192: 17 ms against 48 ms);
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
    with torch.no_grad(), _without_vendor_kernels():
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

    with torch.no_grad(), _without_vendor_kernels(), fx_traceback.preserve_node_meta():
        functional = torch.func.functionalize(run, remove="mutations")
        # No decompositions this time: the graph is core ATen already (and
        # core's slice_scatter decomposition mis-sizes some negative pads).
        # Fake tensors: `inputs` may be blanks (see `_trace`), and the graph
        # reads no values, as it traced once already.
        return make_fx(functional, tracing_mode="fake", record_stack_traces=True)(*inputs)


@contextlib.contextmanager
def _without_vendor_kernels():
    """mkldnn and cuDNN off while tracing: recurrent layers then trace to
    matmuls and pointwise ops. (With mkldnn, fake and meta tensors disagree
    on its results; with cuDNN, nn.LSTM's forward flattens its weights into
    one storage, which tracing cannot follow.) cuDNN's attention too: its op
    returns sequence lengths as ints, which tirc cannot hold, so
    scaled_dot_product_attention traces to the flash, memory-efficient or
    math form. mkldnn's flags() also toggles a TF32 setting that warns on
    builds without Intel GPU support, which is noise here."""
    flags = [torch.backends.mkldnn.flags(enabled=False), torch.backends.cudnn.flags(enabled=False)]
    cudnn_attention = torch.backends.cuda.cudnn_sdp_enabled()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for flag in flags:
            flag.__enter__()
    torch.backends.cuda.enable_cudnn_sdp(False)
    try:
        yield
    finally:
        torch.backends.cuda.enable_cudnn_sdp(cudnn_attention)
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


def _traceback_loc(tb, source: str, source_path: str | None) -> Loc | None:
    frames = [(f.filename, f.lineno) for f in traceback.extract_tb(tb) if f.lineno is not None]
    return _in_source(frames, source, os.path.realpath(source_path) if source_path else None)


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


def _tensor_type(val, where: str) -> TensorType:
    if not isinstance(val, torch.Tensor):
        raise TircError(f"{where} is not a tensor ({type(val).__name__})")
    dtype = from_torch(val.dtype)
    if dtype is None:
        raise TircError(
            f"{where} has dtype {str(val.dtype).removeprefix('torch.')}, which tirc does not support"
        )
    try:
        # A size traced by Dynamo is a symbol with a hint, its example's size.
        shape = tuple(int(s) for s in val.shape)
    except GuardOnDataDependentSymNode:
        # nonzero, unique, masked_select...: a size without a hint, known
        # only from the values.
        sizes = ", ".join(str(s) for s in val.shape)
        raise TircError(
            f"{where} has a shape that depends on the data ([{sizes}]); tirc compiles static shapes only"
        ) from None
    return TensorType(dtype, shape)


# ---- locations: which frame of a node's stack trace is the user's line


def _frames(node) -> list[tuple[str, int]]:
    return [(f, int(line)) for f, line in _FRAME.findall(node.meta.get("stack_trace") or "")]


def _source_locator(source: str, source_path: str | None):
    """Locations of nodes (from their stack traces) in the traced program's own file."""
    want = os.path.realpath(source_path) if source_path else None
    return lambda node: _in_source(_frames(node), source, want)


def _in_source(frames, source: str, want: str | None) -> Loc | None:
    """The innermost of (file, line) `frames` in the program's own file (by
    its real path `want`, else by name)."""
    for filename, line in reversed(frames):
        if want and os.path.realpath(filename) == want:
            return Loc(source, line)
    for filename, line in reversed(frames):
        if os.path.basename(filename) == source:
            return Loc(source, line)
    return None


def _exported_loc(node) -> Loc | None:
    """An exported program names no source file: the innermost frame outside
    torch itself is the user's line (`self.lin(x)`, not nn.Linear's forward)."""
    for filename, line in reversed(_frames(node)):
        if not os.path.realpath(filename).startswith(_TORCH_DIR + os.sep):
            return Loc(os.path.basename(filename), line)
    return None


# ---- the FX graph -> graph ops


@dataclass
class _Graph:
    """An FX graph converted: inputs, ops, the copies back into inputs
    (`update` lines) and the values the graph's output node returns."""

    inputs: list[Input] = field(default_factory=list)
    ops: list[GraphOp] = field(default_factory=list)
    updates: list[tuple[Value, Value]] = field(default_factory=list)
    outputs: list[Value] = field(default_factory=list)

    def module(self, source: str, options_pairs) -> Module:
        module = Module(
            stage="capture",
            source=source,
            version=VERSION,
            options=options_pairs,
            inputs=self.inputs,
            graph=self.ops,
            outputs=tuple(self.outputs),
            updates=tuple(self.updates),
        )
        # What seeded replay must draw (token ids below the vocabulary size...).
        ranges = input_ranges(module)
        for inp in module.inputs:
            inp.range = ranges.get(inp.value)
        return module


def _convert_arg(arg, env, where: str):
    if isinstance(arg, torch.fx.Node):
        return env[arg]
    if isinstance(arg, (list, tuple)):
        return tuple(_convert_arg(a, env, where) for a in arg)
    if isinstance(arg, torch.dtype):
        name = from_torch(arg)
        if name is None:
            raise TircError(f"{where}: dtype {arg} is not supported")
        return Enum(name)
    if isinstance(arg, torch.device):
        return Device(str(arg))
    if isinstance(arg, (torch.layout, torch.memory_format)) and arg in _ENUM_NAMES:
        return Enum(_ENUM_NAMES[arg])
    if arg is None or isinstance(arg, (bool, int, float, str)):
        return arg
    raise TircError(f"{where}: argument {arg!r} of type {type(arg).__name__} is not supported")


def _update(graph: _Graph, target: Value, value, loc: Loc | None = None) -> tuple[Value, Value]:
    """The `update` of `target` with `value`, converted to the target's dtype
    as `copy_` converts (a decomposition's copy may write another dtype:
    training batch norm's float32 running statistics into half buffers); the
    conversion is appended to the graph. (Functionalization broadcasts a
    smaller value itself.)"""
    if not isinstance(value, Value):
        raise TircError("an input is updated with something that is not a tensor")
    if value.type.shape != target.type.shape:
        raise TircError(
            f"an input of shape {list(target.type.shape)} is updated with a value of shape "
            f"{list(value.type.shape)}"
        )
    if value.type.dtype != target.type.dtype:
        kwargs = (("dtype", Enum(target.type.dtype)),)
        result = TensorType(target.type.dtype, target.type.shape)
        value = _append(graph, "aten._to_copy.default", (value,), kwargs, result, loc)
    return target, value


def _append(graph: _Graph, target: str, args: tuple, kwargs: tuple, result: TensorType, loc) -> Value:
    value = Value("", result)
    graph.ops.append(GraphOp((value,), target, args, kwargs, loc))
    return value


def _op_name(target) -> str:
    return f"{target.namespace}.{target._opname}.{target._overloadname}"


def _mutates(target) -> bool:
    if not isinstance(target, torch._ops.OpOverload):
        return False
    return any(a.alias_info is not None and a.alias_info.is_write for a in target._schema.arguments)


def _mutation_error(node, locate) -> TircError:
    """Capture re-functionalizes graphs whose decompositions mutate (see
    _refunctionalize), so a mutation left here is one tirc cannot follow."""
    loc = locate(node)
    first = node.args[0] if node.args else None
    if isinstance(first, torch.fx.Node) and first.op == "placeholder":
        # Functionalization turns value updates of inputs into copy_; what is
        # left changes an input's shape or strides (t_, unsqueeze_, resize_).
        message = (
            f"{_op_name(node.target)} changes the shape or strides of an input in place "
            "(t_, unsqueeze_, an out= of another size); tirc follows updates of values only: "
            "use the out-of-place op"
        )
    else:
        message = f"{_op_name(node.target)} mutates a tensor that is not an input; tirc cannot follow it"
    return TircError(message, loc.file if loc else None, loc.line if loc else None)


def _graph_op(node, env, locate) -> GraphOp:
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        raise TircError(f"unsupported call to {target} in the traced graph")
    name = _op_name(target)
    loc = locate(node)
    val = node.meta.get("val")
    # A None among several results (an unused optional output) is no value.
    vals = [v for v in val if v is not None] if isinstance(val, (tuple, list)) else [val]
    try:
        results = tuple(Value("", _tensor_type(v, f"{name} gives a result that")) for v in vals)
    except TircError as err:
        # Neither lowered nor run through ATen: name the op at the user's line.
        raise TircError(err.message, loc.file if loc else None, loc.line if loc else None) from None
    args = tuple(_convert_arg(a, env, name) for a in node.args)
    kwargs = tuple(sorted((k, _convert_arg(v, env, name)) for k, v in node.kwargs.items()))
    return GraphOp(results, name, args, kwargs, loc)


def _convert(gm, inputs, names, locate) -> _Graph:
    """Convert `gm`'s graph; `inputs` and `names` go with its placeholders in order."""
    env: dict = {}
    updated: dict = {}  # copy_ node -> the input it updates
    graph = _Graph()
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for k, (node, tensor, name) in enumerate(zip(placeholders, inputs, names)):
        ttype = _tensor_type(tensor, f"input '{name}'")
        btype = BufferType(ttype.dtype, ttype.shape, tuple(int(s) for s in tensor.stride()))
        value = Value(_sanitize(name), btype)
        device = "cuda" if tensor.device.type == "cuda" else tensor.device.type
        graph.inputs.append(Input(value, device, k))
        env[node] = value
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.ops.aten.copy_.default:
            if node.args[0].op != "placeholder":
                raise _mutation_error(node, locate)
            # Functionalization's copy back into a mutated input. The ops
            # after it that read the copy read the new value; an output that
            # is the copy is the input itself (the caller's tensor, updated).
            target = env[node.args[0]]
            graph.updates = [u for u in graph.updates if u[0] is not target]
            graph.updates.append(_update(graph, target, env[node.args[1]], locate(node)))
            env[node] = graph.updates[-1][1]
            updated[node] = target
        elif node.op == "call_function" and node.target is operator.getitem:
            env[node] = env[node.args[0]][node.args[1]]
        elif node.op == "call_function" and node.meta.get("val") is None and not node.users:
            continue  # a check with no result (aten._linalg_check_errors)
        elif node.op == "call_function" and _mutates(node.target):
            raise _mutation_error(node, locate)
        elif node.op == "call_function":
            op = _graph_op(node, env, locate)
            graph.ops.append(op)
            val = node.meta.get("val")
            if isinstance(val, (tuple, list)):
                results = iter(op.results)
                env[node] = tuple(None if v is None else next(results) for v in val)
            else:
                env[node] = op.results[0]
        elif node.op == "get_attr":
            raise TircError(
                f"the traced graph holds a constant tensor '{node.target}'; "
                "constants are not supported yet (pass it as an input)"
            )
        elif node.op == "output":
            flat = node.args[0]
            flat = list(flat) if isinstance(flat, (tuple, list)) else [flat]
            for k, out in enumerate(flat):
                if not isinstance(out, torch.fx.Node) or not isinstance(env.get(out), Value):
                    what = type(out).__name__ if not isinstance(out, torch.fx.Node) else "not a tensor"
                    raise TircError(
                        f"output {k} (of the program's outputs, flattened) is {what}; "
                        "every output must be a tensor computed by the program or an input"
                    )
            graph.outputs = [updated.get(o, env[o]) for o in flat]
        elif node.op != "placeholder":
            raise TircError(f"unsupported FX node '{node.op}'")
    return graph
