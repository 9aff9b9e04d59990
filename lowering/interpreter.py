"""The reference interpreter: the oracle that codegen is checked against.

Capture graphs run op by op through ATen (eager PyTorch). Loop nodes are
evaluated with vectorised tensor operations over index grids: each loop
variable is an arange broadcast along its own dimension, index expressions
become integer tensors, loads are gathers from the source's flat storage.
It shares no code with the code generators.
"""

from __future__ import annotations

import torch

from ir_text import FloorDiv, Mod, Module, resolve_target, to_torch, to_torch_arg

_UNARY = {
    "neg": torch.neg,
    "abs": torch.abs,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "round": torch.round,
    "trunc": torch.trunc,
    "sign": torch.sign,
    "reciprocal": torch.reciprocal,
    "exp": torch.exp,
    "exp2": torch.exp2,
    "expm1": torch.expm1,
    "log": torch.log,
    "log2": torch.log2,
    "log10": torch.log10,
    "log1p": torch.log1p,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "sin": torch.sin,
    "cos": torch.cos,
    "tan": torch.tan,
    "asin": torch.asin,
    "acos": torch.acos,
    "atan": torch.atan,
    "sinh": torch.sinh,
    "cosh": torch.cosh,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "erf": torch.erf,
    "bitwise_not": torch.bitwise_not,
    "logical_not": torch.logical_not,
    "isnan": torch.isnan,
}
_BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "truediv": torch.div,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "pow": torch.pow,
    "atan2": torch.atan2,
    "floor_divide": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "remainder": torch.remainder,
    "bitwise_and": torch.bitwise_and,
    "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor,
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
    "logical_and": torch.logical_and,
    "logical_or": torch.logical_or,
    "logical_xor": torch.logical_xor,
}
# Ops handled below, not by the tables; together they cover ir_text.BODY_OPS.
SPECIAL_OPS = ("load", "store", "constant", "to_dtype", "where")
INTERPRETED_OPS = frozenset(_UNARY) | frozenset(_BINARY) | frozenset(SPECIAL_OPS)


def eval_index(expr, env: dict[str, torch.Tensor]):
    """An index expression as an int64 tensor (broadcast over the loop grid)."""
    if expr.is_Integer:
        return torch.tensor(int(expr), dtype=torch.int64)
    if expr.is_Symbol:
        return env[expr.name]
    if expr.is_Add:
        out = eval_index(expr.args[0], env)
        for a in expr.args[1:]:
            out = out + eval_index(a, env)
        return out
    if expr.is_Mul:
        out = eval_index(expr.args[0], env)
        for a in expr.args[1:]:
            out = out * eval_index(a, env)
        return out
    if expr.is_Pow:
        return eval_index(expr.base, env) ** int(expr.exp)
    if isinstance(expr, FloorDiv):
        a, b = (eval_index(x, env) for x in expr.args)
        return torch.div(a, b, rounding_mode="floor")
    if isinstance(expr, Mod):
        a, b = (eval_index(x, env) for x in expr.args)
        return torch.remainder(a, b)
    raise ValueError(f"cannot evaluate index {expr}")


def flat_storage(t: torch.Tensor, storage_size: int) -> torch.Tensor:
    return t.as_strided((storage_size,), (1,), t.storage_offset())


def _eval_node(node, buffers: dict[int, torch.Tensor]) -> torch.Tensor:
    shape = tuple(node.ranges)
    grid = {}
    for k, size in enumerate(shape):
        view = [1] * len(shape)
        view[k] = size
        grid[f"i{k}"] = torch.arange(size, dtype=torch.int64).view(view)
    values: dict[int, torch.Tensor] = {}
    result = None
    for op in node.body:
        args = [values[id(v)] for v in op.operands] if op.op != "load" else []
        if op.op == "load":
            source = op.operands[0]
            flat = flat_storage(buffers[id(source)], source.type.storage_size)
            idx = (
                eval_index(op.attr("index"), grid).expand(shape)
                if shape
                else eval_index(op.attr("index"), grid)
            )
            out = flat[idx]
        elif op.op == "constant":
            out = torch.tensor(op.attr("value"), dtype=to_torch(op.result.type))
        elif op.op == "to_dtype":
            out = args[0].to(to_torch(op.result.type))
        elif op.op == "where":
            out = torch.where(*args)
        elif op.op == "store":
            result = args[0]
            continue
        elif op.op in _UNARY:
            out = _UNARY[op.op](args[0])
        else:
            out = _BINARY[op.op](*args)
        values[id(op.result)] = out
    t = node.result.type
    buffer = torch.empty_strided(t.shape, t.strides, dtype=to_torch(t.dtype))
    buffer.copy_(result.expand(t.shape) if t.shape else result)
    return buffer


def run_graph(module: Module, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Eager PyTorch on a capture-stage graph."""
    env: dict[int, torch.Tensor] = {id(i.value): x for i, x in zip(module.inputs, inputs)}
    for op in module.graph:
        overload = resolve_target(op.target)
        args = [to_torch_arg(a, env) for a in op.args]
        kwargs = {k: to_torch_arg(v, env) for k, v in op.kwargs}
        result = overload(*args, **kwargs)
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        for value, tensor in zip(op.results, results):
            env[id(value)] = tensor
    return [env[id(v)] for v in module.outputs]


def interpret(module: Module, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Evaluate a module of any stage on `inputs` (reference semantics)."""
    with torch.no_grad():
        if module.stage == "capture":
            return run_graph(module, inputs)
        buffers: dict[int, torch.Tensor] = {id(i.value): x for i, x in zip(module.inputs, inputs)}
        for node in module.nodes:
            buffers[id(node.result)] = _eval_node(node, buffers)
        return [buffers[id(v)] for v in module.outputs]
