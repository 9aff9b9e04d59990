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
    if ns.startswith("__") or overload.startswith("__"):
        return (
            None  # Python's own attributes (`__class__.__init__.x`); op names may be dunders (`__lshift__`)
        )
    try:
        packet = getattr(getattr(torch.ops, ns), name)
        found = getattr(packet, overload)
    except (AttributeError, RuntimeError):
        return None
    # Anything else reached by attribute (`aten.__class__.__init__`: a function) is no op.
    return found if isinstance(found, torch._ops.OpOverload) else None


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
    kernel gives. Fake CUDA tensors need no GPU.

    A value bound by its declared layout (`bind`) gets its fake tensor only
    when a call reads it, as making one is costly (measured:
    docs/design-notes.md, "Known gaps"): verifying a stage binds every
    input and node result, and only extern calls read any."""

    def __init__(self, device: str):
        super().__init__()
        self.device = device
        self._fake_mode = None
        # id -> (value, its layout key): bound by declared layout, the fake
        # tensor made on first read. The value is held so its id stays its own.
        self._declared: dict[int, tuple[Value, tuple]] = {}

    @property
    def _mode(self) -> FakeTensorMode:
        if self._fake_mode is None:
            self._fake_mode = FakeTensorMode()
        return self._fake_mode

    def bind(self, value: Value, device: str | None = None) -> None:
        """Bind `value` (a buffer type, or a tensor type taken as contiguous)."""
        t = value.type
        strides = getattr(t, "strides", None) or contiguous_strides(t.shape)
        dict.pop(self, id(value), None)
        self._declared[id(value)] = (value, (t.dtype, tuple(t.shape), tuple(strides), device or self.device))

    def __setitem__(self, key: int, tensor) -> None:
        """A value bound to a call's result tensor (a graph op's)."""
        self._declared.pop(key, None)
        dict.__setitem__(self, key, tensor)

    def __missing__(self, key: int):
        _, (dtype, shape, strides, device) = self._declared[key]
        with self._mode:
            tensor = torch.empty_strided(shape, strides, dtype=TORCH_DTYPES[dtype], device=device)
        dict.__setitem__(self, key, tensor)
        return tensor

    def __contains__(self, key) -> bool:
        return key in self._declared or dict.__contains__(self, key)

    def call_key(self, op) -> tuple | None:
        """What ATen's answer for `op` depends on, when every tensor it
        reads is bound by a declared layout and every result has a declared
        layout to be bound with afterwards (extern nodes): the target, the
        layouts and the literals. None otherwise (graph ops, whose inputs
        are earlier calls' tensors: views of one storage, say)."""
        if not all(hasattr(v.type, "strides") for v in op.results):
            return None

        def key(a):
            if isinstance(a, Value):
                return ("value", self._declared[id(a)][1]) if id(a) in self._declared else None
            if isinstance(a, tuple):
                keys = tuple(key(x) for x in a)
                return None if None in keys else keys
            return (type(a).__name__, repr(a))

        args = key(tuple(op.args) + tuple(v for _, v in op.kwargs))
        return None if args is None else (op.target, tuple(k for k, _ in op.kwargs), args)

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
    caches of every logger in the process (torch has hundreds; measured:
    docs/design-notes.md, "Known gaps"), and every graph op and extern call
    of every stage comes here."""
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
    key = shapes.call_key(op)
    outcome = _OUTCOMES.get(key) if key is not None else None
    tensors = None
    if outcome is None:
        outcome, tensors = _call_outcome(op, overload, shapes)
        if key is not None:
            _OUTCOMES.remember(key, outcome)
    if outcome is _NO_SHAPES_OUTCOME:
        # No meta kernel for this op, or its result shapes depend on the
        # values (CPU lstsq, ctc_loss): trust the declared types.
        _bind_declared(op, shapes)
        return
    if isinstance(outcome, str):  # ATen's own message says what is wrong
        raise error_at(op.pos, f"{op.target}: {outcome}")
    if len(outcome) != len(op.results):
        raise error_at(op.pos, f"{op.target} gives {len(outcome)} result(s), declared {len(op.results)}")
    for k, (value, actual) in enumerate(zip(op.results, outcome)):
        declared = value.type
        if (declared.dtype, declared.shape) != actual:
            got = f"{actual[0]}[{', '.join(map(str, actual[1]))}]"
            want = f"{declared.dtype}[{', '.join(map(str, declared.shape))}]"
            raise error_at(op.pos, f"{op.target} gives {got}, but the type says {want}")
        if tensors is not None:
            shapes[id(value)] = tensors[k]
    _bind_declared(op, shapes)


# The outcome of an op fake tensors cannot give result shapes for.
_NO_SHAPES_OUTCOME = object()


def _call_outcome(op, overload, shapes: Shapes) -> tuple:
    """(outcome, tensors) of running the op on fake tensors: the outcome is
    the results' (dtype, shape) pairs, ATen's error message, or
    _NO_SHAPES_OUTCOME; the tensors are the results (None on failure)."""
    try:
        result = shapes.call(overload, op.args, op.kwargs)
    except _NO_SHAPES:
        return _NO_SHAPES_OUTCOME, None
    except Exception as err:
        return first_line(err) or type(err).__name__, None
    tensors = flat_tensors(result)
    return tuple((from_torch(t.dtype), tuple(t.shape)) for t in tensors), tensors


class _Outcomes(dict):
    """ATen's answers for extern calls by call_key: every stage after
    lowering verifies the same extern calls again, and fake-tensor calls
    are costly (measured: docs/design-notes.md, "Known gaps"). What ATen
    answers depends only on the key."""

    LIMIT = 4096

    def remember(self, key, outcome) -> None:
        if len(self) >= self.LIMIT:
            self.clear()
        self[key] = outcome


_OUTCOMES = _Outcomes()


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
