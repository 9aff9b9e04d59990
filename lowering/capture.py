"""Capture: a callable and example inputs -> a capture-stage Module of core ATen ops.

make_fx traces with the core-ATen decomposition table (functional, no
in-place ops); parameters and buffers of a module are lifted to inputs so the
dump is self-contained. Every op keeps the user's source line from the FX
stack trace.
"""

from __future__ import annotations

import inspect
import operator
import os
import re
import types

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from ir_text import (
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
)

_ENUM_NAMES = {
    torch.strided: "strided",
    torch.contiguous_format: "contiguous_format",
    torch.preserve_format: "preserve_format",
    torch.channels_last: "channels_last",
}
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _decompositions():
    """Core ATen, plus the decompositions Inductor also applies to norms,
    softmax and a few activations, so they lower to reductions and pointwise
    ops (and fuse) instead of running as ATen calls."""
    from torch._decomp import core_aten_decompositions, get_decompositions

    aten = torch.ops.aten
    extra = [
        aten._softmax,
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
    ]
    return {**core_aten_decompositions(), **get_decompositions(extra)}


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


def capture(fn, example_inputs, source: str, source_path: str | None, options_pairs):
    """Trace `fn` (a function or nn.Module) on `example_inputs` into a capture Module.

    Returns (module, lifted, out_spec): the module, the (name, tensor) pairs of
    parameters and buffers that lead its inputs, and the pytree spec that
    rebuilds the program's output structure from the flat outputs.
    """
    module = fn if isinstance(fn, torch.nn.Module) else None
    example_inputs = list(example_inputs)
    for k, x in enumerate(example_inputs):
        if not isinstance(x, torch.Tensor):
            raise TircError(f"input {k} is a {type(x).__name__}; tirc takes tensor inputs")
    # make_fx maps one tensor object to one placeholder: the same tensor passed
    # twice must trace as two inputs, so later copies are traced as clones.
    seen: set[int] = set()
    for k, x in enumerate(example_inputs):
        if id(x) in seen:
            example_inputs[k] = x.clone()
        seen.add(id(x))
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
        flat, spec = torch.utils._pytree.tree_flatten(flat_fn(*args))
        specs.append(spec)
        return flat

    try:
        with torch.no_grad():
            # Functionalized: in-place ops become their functional forms, and a
            # mutated input ends in a copy_ back into it (an `update` line).
            functional = torch.func.functionalize(flat_outputs, remove="mutations")
            gm = make_fx(functional, decomposition_table=_decompositions(), record_stack_traces=True)(
                *all_inputs
            )
    except TircError:
        raise
    except Exception as err:
        raise TircError(f"tracing failed: {type(err).__name__}: {_first_line(err)}") from None
    module_ir = _to_module(gm, all_inputs, all_names, source, source_path, options_pairs)
    return module_ir, lifted, specs[-1]


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


def _first_line(err: Exception) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else ""


def _lifted_call(module: torch.nn.Module, state_names: list[str]):
    def call(*flat):
        state = dict(zip(state_names, flat[: len(state_names)]))
        return torch.func.functional_call(module, state, tuple(flat[len(state_names) :]))

    return call


def _tensor_type(val, where: str) -> TensorType:
    if not isinstance(val, torch.Tensor):
        raise TircError(f"{where} is not a tensor ({type(val).__name__})")
    dtype = from_torch(val.dtype)
    if dtype is None:
        raise TircError(f"{where} has dtype {val.dtype}, which tirc does not support")
    return TensorType(dtype, tuple(int(s) for s in val.shape))


def _loc(node, source: str, source_path: str | None) -> Loc | None:
    trace = node.meta.get("stack_trace") or ""
    frames = _FRAME.findall(trace)
    want = os.path.realpath(source_path) if source_path else None
    for filename, line in reversed(frames):
        if want and os.path.realpath(filename) == want:
            return Loc(source, int(line))
    for filename, line in reversed(frames):
        if os.path.basename(filename) == source:
            return Loc(source, int(line))
    return None


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


def _to_module(gm, inputs, names, source, source_path, options_pairs) -> Module:
    env: dict = {}
    module_inputs: list[Input] = []
    graph: list[GraphOp] = []
    outputs: tuple = ()
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for k, (node, tensor, name) in enumerate(zip(placeholders, inputs, names)):
        ttype = _tensor_type(tensor, f"input '{name}'")
        btype = BufferType(ttype.dtype, ttype.shape, tuple(int(s) for s in tensor.stride()))
        value = Value(_sanitize(name), btype)
        device = "cuda" if tensor.device.type == "cuda" else tensor.device.type
        module_inputs.append(Input(value, device, k))
        env[node] = value
    updates = []
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.ops.aten.copy_.default:
            target, value = (env[a] for a in node.args[:2])
            if not any(i.value is target for i in module_inputs) or not isinstance(value, Value):
                raise TircError("the program mutates a tensor that is not an input; tirc cannot follow it")
            if value.type != TensorType(target.type.dtype, target.type.shape):
                raise TircError("an input is updated with a value of another shape or dtype")
            updates.append((target, value))
            env[node] = target
        elif node.op == "call_function" and node.target is operator.getitem:
            env[node] = env[node.args[0]][node.args[1]]
        elif node.op == "call_function":
            target = node.target
            if not isinstance(target, torch._ops.OpOverload):
                raise TircError(f"unsupported call to {target} in the traced graph")
            name = f"{target.namespace}.{target._opname}.{target._overloadname}"
            where = name
            val = node.meta.get("val")
            vals = list(val) if isinstance(val, (tuple, list)) else [val]
            results = tuple(Value("", _tensor_type(v, f"result of {name}")) for v in vals)
            args = tuple(_convert_arg(a, env, where) for a in node.args)
            kwargs = tuple(sorted((k, _convert_arg(v, env, where)) for k, v in node.kwargs.items()))
            graph.append(GraphOp(results, name, args, kwargs, _loc(node, source, source_path)))
            env[node] = results[0] if len(results) == 1 else results
        elif node.op == "get_attr":
            raise TircError(
                f"the traced graph holds a constant tensor '{node.target}'; "
                "constants are not supported yet (pass it as an input)"
            )
        elif node.op == "output":
            flat = node.args[0]
            flat = list(flat) if isinstance(flat, (tuple, list)) else [flat]
            for out in flat:
                if not isinstance(out, torch.fx.Node) or not isinstance(env.get(out), Value):
                    raise TircError("every output must be a tensor computed by the graph or an input")
            outputs = tuple(env[o] for o in flat)
        elif node.op != "placeholder":
            raise TircError(f"unsupported FX node '{node.op}'")
    return Module(
        stage="capture",
        source=source,
        version=VERSION,
        options=options_pairs,
        inputs=module_inputs,
        graph=graph,
        outputs=outputs,
        updates=tuple(updates),
    )
