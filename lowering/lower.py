"""The lower pass: capture-stage ATen graph -> loop nodes (one buffer per op).

Pointwise ops become `loop.pointwise` nodes whose bodies load their inputs
with broadcasting; the scheduler fuses them afterwards. An op without a
lowering is an error naming the op and its source line.
"""

from __future__ import annotations

import torch

from ir_text import (
    BufferType,
    GraphOp,
    LoopNode,
    Module,
    TircError,
    Value,
    contiguous_strides,
    from_torch,
    to_torch,
)

from .body import BodyBuilder, compute_dtype
from .pointwise import POINTWISE


def _promoted(op: GraphOp, positions) -> str:
    """The dtype ATen's type promotion gives the arguments at `positions`."""
    operands = []
    for k in positions:
        if k >= len(op.args):
            continue
        a = op.args[k]
        if isinstance(a, Value):
            t = a.type
            operands.append(torch.empty((1,) * len(t.shape), dtype=to_torch(t.dtype), device="meta"))
        elif isinstance(a, (bool, int, float)):
            operands.append(a)
    if not operands:
        return op.results[0].type.dtype
    if len(operands) == 1:
        x = operands[0]
        return from_torch(x.dtype) if isinstance(x, torch.Tensor) else op.results[0].type.dtype
    dtype = torch.result_type(operands[0], operands[1])
    for extra in operands[2:]:
        dtype = torch.result_type(torch.empty((1,), dtype=dtype, device="meta"), extra)
    return from_torch(dtype)


def _error(op: GraphOp, message: str) -> TircError:
    """An error located at the op's line in the user's source (when known)."""
    if op.loc is not None:
        return TircError(message, op.loc.file, op.loc.line)
    return TircError(message)


def _lower_op(op: GraphOp, env: dict[int, Value]) -> LoopNode:
    spec = POINTWISE.get(op.target)
    if spec is None:
        raise _error(op, f"no lowering for {op.target} (the ATen fallback is not built yet)")
    if len(op.results) != 1:
        raise _error(op, f"no lowering for {op.target}, which has several results")
    out = op.results[0].type
    compute = {
        "out": lambda: compute_dtype(out.dtype),
        "promote": lambda: compute_dtype(_promoted(op, spec.promote_args)),
        "bool": lambda: "b8",
    }[spec.compute]()
    builder = BodyBuilder(out.shape, compute)
    args = [env.get(id(a), a) if isinstance(a, Value) else a for a in op.args]
    kwargs = {k: env.get(id(v), v) if isinstance(v, Value) else v for k, v in op.kwargs}
    try:
        result = spec.fn(builder, *args, **kwargs)
    except TypeError as err:
        raise _error(op, f"cannot lower {op.target}: {err}") from None
    builder.store(builder.cast(result, out.dtype))
    buffer = Value("", BufferType(out.dtype, out.shape, contiguous_strides(out.shape)))
    # The ATen op the node came from, as Inductor keeps a node's origins.
    origin = (("origin", op.target),)
    return LoopNode(buffer, "pointwise", out.shape, (), origin, builder.ops, op.loc)


def lower(module: Module, ctx=None) -> Module:
    env: dict[int, Value] = {id(i.value): i.value for i in module.inputs}
    nodes: list[LoopNode] = []
    for op in module.graph:
        node = _lower_op(op, env)
        nodes.append(node)
        env[id(op.results[0])] = node.result
    outputs = tuple(env[id(v)] for v in module.outputs)
    return Module(
        stage="lower",
        source=module.source,
        version=module.version,
        options=module.options,
        inputs=module.inputs,
        nodes=nodes,
        outputs=outputs,
    )
