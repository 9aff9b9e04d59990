"""The reference interpreter: the oracle that codegen is checked against.

Capture graphs run op by op through ATen (eager PyTorch). Loop nodes are
evaluated with vectorised tensor operations over index grids: each loop
variable is an arange broadcast along its own dimension, index expressions
become integer tensors, loads are gathers from the source's flat storage.
It shares no code with the code generators.

ATen ops (graph ops, extern nodes) run as the text names them, except on
float64 operands, where an op without a float64 kernel runs through its
stand-in in float64_equivalents.py: the float64 reference of `tirc replay`
must exist for every op the compiler emits.
"""

from __future__ import annotations

import torch

from ir_text import (
    Module,
    check_index_arguments,
    empty_reduction,
    eval_index,
    flat_tensors,
    from_torch,
    resolve_target,
    to_torch,
    to_torch_arg,
)

from .float64_equivalents import NoFloat64Kernel, call_op

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
    "signbit": torch.signbit,
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
    "copysign": torch.copysign,
    "floor_divide": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "remainder": torch.remainder,
    "fmod": torch.fmod,
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
SPECIAL_OPS = ("load", "store", "constant", "to_dtype", "where", "index", "indirect", "reduce", "scan")
INTERPRETED_OPS = frozenset(_UNARY) | frozenset(_BINARY) | frozenset(SPECIAL_OPS)


def flat_storage(t: torch.Tensor, storage_size: int) -> torch.Tensor:
    return t.as_strided((storage_size,), (1,), t.storage_offset())


def _reduce(kind: str, x: torch.Tensor, rnumel: int) -> torch.Tensor:
    """Reduce the last dimension (the flattened r-variables)."""
    if rnumel == 0:
        shape = x.shape[:-1]
        dtype = torch.int64 if kind in ("argmax", "argmin") else x.dtype
        return torch.full(shape, empty_reduction(kind, from_torch(x.dtype)), dtype=dtype, device=x.device)
    reducers = {
        "sum": lambda: x.sum(-1),
        "prod": lambda: x.prod(-1),
        "max": lambda: x.amax(-1),
        "min": lambda: x.amin(-1),
        "argmax": lambda: x.argmax(-1),
        "argmin": lambda: x.argmin(-1),
        "any": lambda: x.any(-1),
        "all": lambda: x.all(-1),
    }
    return reducers[kind]()


class _Body:
    """Evaluates one loop body over its index grid."""

    def __init__(self, node, buffers):
        self.node = node
        self.buffers = buffers
        # Index grids live where the node's sources do (a CUDA dump stays on CUDA).
        sources = [buffers[id(op.operands[0])] for op in node.body if op.op == "load"]
        self.device = sources[0].device if sources else torch.device("cpu")
        self.outer = tuple(node.ranges)
        self.rshape = tuple(node.reduction_ranges)
        self.shape = self.outer + self.rshape
        rank = len(self.shape)
        self.grid = {}
        names = [f"i{k}" for k in range(len(self.outer))] + [f"r{k}" for k in range(len(self.rshape))]
        for k, (name, size) in enumerate(zip(names, self.shape)):
            view = [1] * rank
            view[k] = size
            self.grid[name] = torch.arange(size, dtype=torch.int64, device=self.device).view(view)
        self.values: dict[int, torch.Tensor] = {}
        self.indirect = 0

    def index(self, expr) -> torch.Tensor:
        idx = eval_index(expr, self.grid)
        return idx.expand(self.shape) if self.shape else idx

    def run(self) -> torch.Tensor:
        for op in self.node.body:
            if op.op == "store":
                return self.values[id(op.operands[0])]
            self.values[id(op.result)] = self.step(op)
        raise ValueError("a loop body without a store")

    def step(self, op) -> torch.Tensor:
        args = [self.values[id(v)] for v in op.operands] if op.op != "load" else []
        dtype = to_torch(op.result.type)
        if op.op == "load":
            source = op.operands[0]
            flat = flat_storage(self.buffers[id(source)], source.type.storage_size)
            return flat[self.index(op.attr("index"))]
        if op.op == "index":
            return self.index(op.attr("index"))
        if op.op == "constant":
            return torch.tensor(op.attr("value"), dtype=dtype, device=self.device)
        if op.op == "to_dtype":
            return args[0].to(dtype)
        if op.op == "where":
            return torch.where(*args)
        if op.op == "indirect":
            size = op.attr("size")
            idx = args[0].to(torch.int64)
            wrapped = torch.where(idx < 0, idx + size, idx) if op.attr("wrap", True) else idx
            bad = (wrapped < 0) | (wrapped >= size)
            if bad.any():
                index = int(idx[bad].flatten()[0])
                raise IndexError(
                    f"index {index} is out of bounds for a dimension of size {size} (in {self.node.site})"
                )
            self.grid[f"ind{self.indirect}"] = wrapped
            self.indirect += 1
            return idx
        if op.op == "reduce":
            return self.reduce(op, args[0], dtype)
        if op.op == "scan":
            x = args[0].expand(self.shape) if self.shape else args[0]
            dim = op.attr("dim")
            out = x.cumsum(dim) if op.attr("reduction").name == "sum" else x.cumprod(dim)
            return out.to(dtype)
        if op.op in _UNARY:
            return _UNARY[op.op](args[0])
        return _BINARY[op.op](*args)

    def reduce(self, op, x, dtype) -> torch.Tensor:
        x = x.expand(self.shape) if self.shape else x
        rnumel = 1
        for s in self.rshape:
            rnumel *= s
        x = x.reshape(self.outer + (rnumel,))
        out = _reduce(op.attr("reduction").name, x, rnumel).to(dtype)
        # The epilogue runs over the output elements only.
        self.shape = self.outer
        rank = len(self.outer)
        # Loop and indirect index variables that do not vary along the
        # reduction stay; one that does (a gather inside the reduction) is
        # out of the epilogue's scope.
        self.grid = {
            k: v.reshape(v.shape[:rank])
            for k, v in self.grid.items()
            if k.startswith("i") and all(s == 1 for s in v.shape[rank:])
        }
        return out


def _eval_node(node, buffers: dict[int, torch.Tensor]) -> torch.Tensor:
    body = _Body(node, buffers)
    result = body.run()
    t = node.result.type
    buffer = torch.empty_strided(t.shape, t.strides, dtype=to_torch(t.dtype), device=body.device)
    buffer.copy_(result.expand(t.shape) if t.shape else result)
    return buffer


def _call(op, env: dict[int, torch.Tensor]):
    """Run a graph op or extern node's ATen op on the values in `env`."""
    args = [to_torch_arg(a, env) for a in op.args]
    kwargs = {k: to_torch_arg(v, env) for k, v in op.kwargs}
    check_index_arguments(op.target, args, kwargs)  # a dump's indices, before ATen trusts them
    try:
        return call_op(op.target, resolve_target(op.target), args, kwargs)
    except NoFloat64Kernel as err:  # located at the op, for the message
        raise NoFloat64Kernel(str(err), op.pos) from err


def _eval_extern(node, buffers: dict[int, torch.Tensor]) -> list[torch.Tensor]:
    """Call the ATen op and copy each result into its declared layout."""
    results = flat_tensors(_call(node, buffers))
    out = []
    for value, tensor in zip(node.results, results):
        t = value.type
        buffer = torch.empty_strided(t.shape, t.strides, dtype=to_torch(t.dtype), device=tensor.device)
        buffer.copy_(tensor)
        out.append(buffer)
    return out


def run_graph(module: Module, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Eager PyTorch on a capture-stage graph."""
    env: dict[int, torch.Tensor] = {id(i.value): x for i, x in zip(module.inputs, inputs)}
    for op in module.graph:
        results = flat_tensors(_call(op, env))
        for value, tensor in zip(op.results, results):
            env[id(value)] = tensor
    _apply_updates(module, env, inputs)
    return [env[id(v)] for v in module.outputs]


def _apply_updates(module: Module, env, inputs) -> None:
    """Write the new values of mutated inputs into the input tensors (as `call` does)."""
    position = {id(i.value): k for k, i in enumerate(module.inputs)}
    for target, value in module.updates:
        inputs[position[id(target)]].copy_(env[id(value)])


def interpret(module: Module, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Evaluate a module of any stage on `inputs` (reference semantics)."""
    with torch.no_grad():
        if module.stage == "capture":
            return run_graph(module, inputs)
        buffers: dict[int, torch.Tensor] = {id(i.value): x for i, x in zip(module.inputs, inputs)}
        for node in module.nodes:
            if node.kind == "extern":
                for value, tensor in zip(node.results, _eval_extern(node, buffers)):
                    buffers[id(value)] = tensor
            else:
                buffers[id(node.result)] = _eval_node(node, buffers)
        outputs = [buffers[id(v)] for v in module.outputs]
        _apply_updates(module, buffers, inputs)
        return outputs
