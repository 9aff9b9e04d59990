"""Checks of capture-stage graphs: each op exists, its arity fits the ATen schema,
and its declared result types are the ones ATen infers (run on fake tensors)."""

from __future__ import annotations

import contextlib
import logging

import torch
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensorMode,
    UnsupportedOperatorException,
)

from .dtypes import TORCH_DTYPES, from_torch
from .errors import error_at, first_line
from .index import contiguous_strides, storage_span
from .model import Device, Enum, Module, Symbol, Value

# Bare-name literals other than dtypes that ATen schemas take.
ENUMS = {
    "strided": torch.strided,
    "contiguous_format": torch.contiguous_format,
    "preserve_format": torch.preserve_format,
    "channels_last": torch.channels_last,
    "channels_last_3d": torch.channels_last_3d,
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


def to_torch_arg(arg, env: dict[int, torch.Tensor]):
    """A literal or value of the IR as the Python object an ATen op takes."""
    if isinstance(arg, Value):
        return env[id(arg)]
    if isinstance(arg, Enum):
        value = enum_value(arg)
        if value is None:
            raise ValueError(f"unknown name '{arg.name}'")
        return value
    if isinstance(arg, Device):
        return torch.device(arg.name)
    if isinstance(arg, Symbol):
        raise ValueError(f"@{arg.name} is not an op argument")
    if isinstance(arg, tuple):
        return [to_torch_arg(a, env) for a in arg]
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


# What fake tensors raise for an op they cannot give result shapes for.
_NO_SHAPES = (
    NotImplementedError,
    UnsupportedOperatorException,
    DataDependentOutputException,
    DynamicOutputShapeException,
)


class Shapes(dict):
    """Tensors without data (shape, strides, dtype, device) for IR values,
    keyed by value id, and ATen calls on them.

    They are fake tensors on the program's device, not meta tensors: a few
    CPU kernels give results of other shapes than their meta kernels (the
    CPU batch norm's saved mean is empty in eval mode, the CPU embedding
    bag's offset2bag in sum mode), and capture records what the device's
    kernel gives. Fake CUDA tensors need no GPU."""

    def __init__(self, device: str):
        super().__init__()
        self.device = device
        self._mode = FakeTensorMode()

    def bind(self, value: Value, device: str | None = None) -> None:
        """Bind `value` (a buffer type, or a tensor type taken as contiguous)."""
        t = value.type
        strides = getattr(t, "strides", None) or contiguous_strides(t.shape)
        with self._mode:
            self[id(value)] = torch.empty_strided(
                t.shape, strides, dtype=TORCH_DTYPES[t.dtype], device=device or self.device
            )

    def call(self, overload, args, kwargs):
        """`overload` on the values' tensors and the literals; ATen's result."""
        with self._mode, torch.no_grad(), quiet_fake_tensors():
            return overload(
                *[to_torch_arg(a, self) for a in args],
                **{k: to_torch_arg(v, self) for k, v in kwargs},
            )


@contextlib.contextmanager
def quiet_fake_tensors():
    """Fake tensors log a meta kernel's failure with its traceback; the
    error it raises is reported once, as one line, by the caller.

    The logger is disabled, not given a level: `setLevel` clears the level
    caches of every logger in the process (torch has hundreds), 0.1 ms per
    call, and every graph op and extern call of every stage comes here."""
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    disabled = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = disabled


def module_device(m: Module) -> str:
    """The device the module's buffers live on (its option, else its inputs')."""
    device = dict(m.options).get("device")
    if device is None:
        device = m.inputs[0].device if m.inputs else "cpu"
    return str(device)


def input_shapes(m: Module) -> Shapes:
    """Shapes bound for the module's inputs."""
    shapes = Shapes(module_device(m))
    for inp in m.inputs:
        shapes.bind(inp.value, inp.device)
    return shapes


def check_graph(m: Module) -> None:
    shapes = input_shapes(m)
    for op in m.graph:
        check_call(op, shapes)


def check_call(op, shapes: Shapes) -> None:
    """Check one ATen call (a graph op or an extern node) on fake tensors and
    bind its results in `shapes`: the op exists, its arguments fit the schema,
    and the declared result dtypes and shapes are the ones ATen infers."""
    overload = resolve_target(op.target)
    if overload is None:
        raise error_at(op.pos, f"unknown op '{op.target}'")
    _check_arity(op, overload)
    if op.target in _BOUNDS_CHECKS:
        _BOUNDS_CHECKS[op.target](op)
    try:
        result = shapes.call(overload, op.args, op.kwargs)
    except _NO_SHAPES:
        # No meta kernel for this op, or its result shapes depend on the
        # values (CPU lstsq, ctc_loss): trust the declared types.
        _bind_declared(op, shapes)
        return
    except Exception as err:  # ATen's own message says what is wrong
        first = first_line(err) or type(err).__name__
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
        shapes[id(value)] = tensor
    _bind_declared(op, shapes)


def _check_as_strided(op) -> None:
    """A view must lie inside its source's storage: fake tensors do not
    check it, and the real call fails only at run time."""
    source, size, stride = op.args[:3]
    offset = (op.args[3] if len(op.args) > 3 else dict(op.kwargs).get("storage_offset")) or 0
    storage = getattr(getattr(source, "type", None), "storage_size", None)
    if storage is None or not all(type(v) is int for v in (*size, *stride, offset)):
        return
    end = offset + storage_span(size, stride)
    if offset < 0:
        raise error_at(op.pos, f"{op.target}: a negative storage offset ({offset})")
    if end > storage:
        raise error_at(
            op.pos, f"{op.target}: the view reaches element {end - 1} of a source of {storage} elements"
        )


# Calls whose arguments must fit the IR's own buffers, beyond ATen's checks.
_BOUNDS_CHECKS = {"aten.as_strided.default": _check_as_strided}


def _bind_declared(op, shapes: Shapes) -> None:
    """Results with a declared layout (extern nodes) are bound with it; after
    an op without a meta kernel, graph results are bound contiguous."""
    for value in op.results:
        if hasattr(value.type, "strides") or id(value) not in shapes:
            shapes.bind(value)


def shape_call(target: str, args, kwargs, device: str) -> list:
    """Run the ATen op `target` on fake tensors (on `device`) shaped like the
    IR `args` (Values with buffer layouts, and literals); its flat tensor results."""
    shapes = Shapes(device)

    def bind(a):
        if isinstance(a, Value) and id(a) not in shapes:
            shapes.bind(a)
        elif isinstance(a, tuple):
            for x in a:
                bind(x)

    for a in list(args) + [v for _, v in kwargs]:
        bind(a)
    return flat_tensors(shapes.call(resolve_target(target), args, kwargs))
