"""The FX-graph converter both capture front ends meet in: an FX graph of core
ATen ops (functionalized, its placeholders paired with tensors and names) ->
the inputs, graph ops, `update` lines and outputs of a capture Module."""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field

import torch
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

from ir_text import (
    ENUMS,
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

from .value_ranges import input_ranges

_ENUM_NAMES = {value: name for name, value in ENUMS.items()}


def _sanitize(name: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.]", "_", name)
    if not name or name.isdigit() or re.fullmatch(r"(buf|ind)\d+", name) or name[0].isdigit():
        name = "arg_" + name
    return name


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
