"""Checks of capture-stage graphs: each op exists, its arity fits the ATen schema,
and its declared result types are the ones ATen infers (run on meta tensors)."""

from __future__ import annotations

import torch

from .dtypes import TORCH_DTYPES, from_torch
from .errors import error_at
from .model import Device, Enum, Module, Symbol, Value

# Bare-name literals other than dtypes that ATen schemas take.
ENUMS = {
    "strided": torch.strided,
    "contiguous_format": torch.contiguous_format,
    "preserve_format": torch.preserve_format,
    "channels_last": torch.channels_last,
}


def resolve_target(target: str):
    """The torch OpOverload named `ns.op.overload`, or None."""
    parts = target.split(".")
    if len(parts) != 3:
        return None
    ns, name, overload = parts
    try:
        packet = getattr(getattr(torch.ops, ns), name)
        return getattr(packet, overload)
    except (AttributeError, RuntimeError):
        return None


def enum_value(e: Enum):
    if e.name in TORCH_DTYPES:
        return TORCH_DTYPES[e.name]
    return ENUMS.get(e.name)


def to_torch_arg(arg, env: dict[int, torch.Tensor], device: str | None = None):
    """A literal or value of the IR as the Python object an ATen op takes
    (with every device literal replaced by `device`, when given)."""
    if isinstance(arg, Value):
        return env[id(arg)]
    if isinstance(arg, Enum):
        value = enum_value(arg)
        if value is None:
            raise ValueError(f"unknown name '{arg.name}'")
        return value
    if isinstance(arg, Device):
        return torch.device(device or arg.name)
    if isinstance(arg, Symbol):
        raise ValueError(f"@{arg.name} is not an op argument")
    if isinstance(arg, tuple):
        return [to_torch_arg(a, env, device) for a in arg]
    return arg


def _check_arity(op, overload) -> None:
    schema = overload._schema
    positional = [a for a in schema.arguments if not a.kwarg_only]
    names = {a.name for a in schema.arguments}
    if len(op.args) > len(positional):
        raise error_at(
            op.pos,
            f"{op.target} takes at most {len(positional)} positional argument(s), got {len(op.args)}",
        )
    given = {a.name for a in positional[: len(op.args)]} | {k for k, _ in op.kwargs}
    for key, _ in op.kwargs:
        if key not in names:
            raise error_at(op.pos, f"{op.target} has no argument '{key}'")
    for a in schema.arguments:
        if a.name not in given and not a.has_default_value():
            raise error_at(op.pos, f"{op.target} is missing argument '{a.name}'")


def flat_tensors(result) -> list:
    """The tensors of an ATen result, flattened in order (None entries skipped)."""
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in flat_tensors(r)]
    return []


def meta_inputs(m: Module) -> dict[int, torch.Tensor]:
    """Meta tensors (shape, strides, dtype) for the module's inputs, keyed by value id."""
    env: dict[int, torch.Tensor] = {}
    for inp in m.inputs:
        t = inp.value.type
        env[id(inp.value)] = torch.empty_strided(
            t.shape, t.strides, dtype=TORCH_DTYPES[t.dtype], device="meta"
        )
    return env


def check_graph(m: Module) -> None:
    env = meta_inputs(m)
    for op in m.graph:
        check_call(op, env)


def check_call(op, env: dict[int, torch.Tensor]) -> None:
    """Check one ATen call (a graph op or an extern node) on meta tensors and
    bind its results in `env`: the op exists, its arguments fit the schema,
    and the declared result dtypes and shapes are the ones ATen infers."""
    overload = resolve_target(op.target)
    if overload is None:
        raise error_at(op.pos, f"unknown op '{op.target}'")
    _check_arity(op, overload)
    try:
        args = [to_torch_arg(a, env, "meta") for a in op.args]
        kwargs = {k: to_torch_arg(v, env, "meta") for k, v in op.kwargs}
        with torch.no_grad():
            result = overload(*args, **kwargs)
    except NotImplementedError:
        # No meta kernel for this op: trust the declared types.
        _bind_declared(op, env)
        return
    except Exception as err:  # ATen's own message says what is wrong
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise error_at(op.pos, f"{op.target}: {first}") from None
    tensors = flat_tensors(result)
    if len(tensors) != len(op.results):
        raise error_at(op.pos, f"{op.target} gives {len(tensors)} result(s), declared {len(op.results)}")
    for value, tensor in zip(op.results, tensors):
        declared = value.type
        actual = (from_torch(tensor.dtype), tuple(tensor.shape))
        if (declared.dtype, declared.shape) != actual:
            got = f"{actual[0]}[{', '.join(map(str, actual[1]))}]"
            want = f"{declared.dtype}[{', '.join(map(str, declared.shape))}]"
            raise error_at(op.pos, f"{op.target} gives {got}, but the type says {want}")
        env[id(value)] = tensor
    _bind_declared(op, env)


def _bind_declared(op, env) -> None:
    """Results with a declared layout (extern nodes) are bound with it; after
    an op without a meta kernel, graph results are bound contiguous."""
    for value in op.results:
        if hasattr(value.type, "strides"):
            bind_meta(value, env)
        elif id(value) not in env:
            t = value.type
            env[id(value)] = torch.empty(t.shape, dtype=TORCH_DTYPES[t.dtype], device="meta")


def bind_meta(value, env) -> None:
    """Bind a buffer value to a meta tensor of its layout."""
    t = value.type
    env[id(value)] = torch.empty_strided(t.shape, t.strides, dtype=TORCH_DTYPES[t.dtype], device="meta")


def meta_call(target: str, args, kwargs) -> list:
    """Run the ATen op `target` on meta tensors shaped like the IR `args`
    (Values with buffer layouts, and literals); its flat tensor results."""
    env: dict[int, torch.Tensor] = {}

    def bind(a):
        if isinstance(a, Value) and id(a) not in env:
            t = a.type
            env[id(a)] = torch.empty_strided(t.shape, t.strides, dtype=TORCH_DTYPES[t.dtype], device="meta")
        elif isinstance(a, tuple):
            for x in a:
                bind(x)

    for a in list(args) + [v for _, v in kwargs]:
        bind(a)
    overload = resolve_target(target)
    with torch.no_grad():
        result = overload(
            *[to_torch_arg(a, env, "meta") for a in args],
            **{k: to_torch_arg(v, env, "meta") for k, v in kwargs},
        )
    return flat_tensors(result)
