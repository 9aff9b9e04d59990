"""Float64 stand-ins for the ops tirc emits that have no float64 kernel.

`tirc replay` takes a second look at a float32 difference by running the
dump's program in float64 (every f32 of it made f64: lowering.widened). A few ops the
compiler may emit take no float64 operands: oneDNN's linear, which
codegen/cpp_extern_select.py picks at compile time where it times faster than
ATen's addmm, accepts only float, bfloat16 and half. On float64 operands the
reference interpreter calls an ATen op that computes the same and has a
float64 kernel instead. Generated code never comes here: it calls the op the
dump names, whatever the dtype.

An op that fails on float64 operands, has no stand-in, and runs on the same
values in float32 has no float64 kernel: `NoFloat64Kernel` names it, so that
the reference is reported as impossible and not the program as wrong.
"""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_leaves, tree_map

ONEDNN_LINEAR = "mkldnn._linear_pointwise.default"


class NoFloat64Kernel(Exception):
    """An op that cannot run on float64 operands, not even through a stand-in;
    `pos` is the (line, col) of its node, where the interpreter knows it."""

    def __init__(self, message: str, pos=None):
        super().__init__(message)
        self.pos = pos


def _onednn_linear(x, weight, bias, attr, scalars, algorithm):
    """oneDNN's linear is x @ weight.T + bias followed by the post-op `attr`.
    Only "none" (what extern_select emits) is computed here: another post-op
    is refused rather than silently left out."""
    if attr != "none":
        raise NoFloat64Kernel(f"{ONEDNN_LINEAR} with post-op {attr!r} has no float64 equivalent")
    rows = x.reshape(-1, x.shape[-1])  # the op flattens leading dimensions, as F.linear does
    out = torch.mm(rows, weight.t()) if bias is None else torch.addmm(bias, rows, weight.t())
    return out.reshape(*x.shape[:-1], weight.shape[0])


# Op name -> a function of the op's arguments (all positional, in its
# schema's order) computing its result in float64.
FLOAT64_EQUIVALENTS = {
    ONEDNN_LINEAR: _onednn_linear,
}


def call_op(target: str, overload, args: list, kwargs: dict):
    """`overload(*args, **kwargs)`, the op named `target`; on float64 operands
    through its stand-in where it has one. Raises NoFloat64Kernel when the op
    fails on float64 operands and runs on the same values in float32."""
    if not _has_float64(args, kwargs):
        return overload(*args, **kwargs)
    equivalent = FLOAT64_EQUIVALENTS.get(target)
    if equivalent is not None:
        return equivalent(*_positional(overload, args, kwargs))
    try:
        return overload(*args, **kwargs)
    except Exception as err:
        if not _runs_in_float32(overload, args, kwargs):
            raise  # not the dtype: the op's own complaint stands
        first = (str(err).strip().splitlines() or [""])[0]
        raise NoFloat64Kernel(f"{target} has no float64 kernel ({type(err).__name__}: {first})") from err


def _positional(overload, args: list, kwargs: dict) -> list:
    """Every argument of the op in its schema's order, defaults filled in."""
    values = list(args)
    for argument in overload._schema.arguments[len(args) :]:
        if argument.name in kwargs:
            values.append(kwargs[argument.name])
        elif argument.has_default_value():
            values.append(argument.default_value)
        else:
            raise TypeError(f"{overload.name()}: missing argument {argument.name!r}")
    return values


def _has_float64(args, kwargs) -> bool:
    return any(isinstance(t, torch.Tensor) and t.dtype == torch.float64 for t in tree_leaves((args, kwargs)))


def _runs_in_float32(overload, args, kwargs) -> bool:
    """Whether the op accepts the same values with its float64 tensors made float32."""
    narrow = tree_map(
        lambda t: t.float() if isinstance(t, torch.Tensor) and t.dtype == torch.float64 else t, (args, kwargs)
    )
    try:
        overload(*narrow[0], **narrow[1])
    except Exception:
        return False
    return True
