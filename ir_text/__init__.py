"""The IR of every stage: data model, grammar, printer, parser, verifier."""

from .dtypes import TORCH_DTYPES, from_torch, is_float, to_torch
from .errors import TircError, error_at
from .graph_check import resolve_target, to_torch_arg
from .index import (
    FloorDiv,
    IndexStyle,
    Mod,
    contiguous_strides,
    index_var,
    loop_vars,
    render_index,
    strided_index,
)
from .model import (
    STAGES,
    BodyOp,
    BufferType,
    Dep,
    Device,
    Enum,
    GraphOp,
    Input,
    Kernel,
    Loc,
    LoopNode,
    Module,
    NodeFacts,
    Refusal,
    Symbol,
    TensorType,
    Value,
    WrapperLine,
)
from .body_ops import BODY_OPS
from .equality import structurally_equal
from .parser import parse
from .printer import VERSION, format_attrs, format_fact, format_literal, print_ir, value_names
from .verifier import verify

__all__ = [
    "BODY_OPS",
    "BodyOp",
    "BufferType",
    "Dep",
    "Device",
    "Enum",
    "FloorDiv",
    "GraphOp",
    "IndexStyle",
    "Input",
    "Kernel",
    "Loc",
    "LoopNode",
    "Mod",
    "Module",
    "NodeFacts",
    "Refusal",
    "STAGES",
    "Symbol",
    "TORCH_DTYPES",
    "TensorType",
    "TircError",
    "VERSION",
    "Value",
    "WrapperLine",
    "contiguous_strides",
    "error_at",
    "format_attrs",
    "format_fact",
    "format_literal",
    "from_torch",
    "index_var",
    "is_float",
    "loop_vars",
    "parse",
    "print_ir",
    "render_index",
    "resolve_target",
    "strided_index",
    "structurally_equal",
    "to_torch",
    "to_torch_arg",
    "value_names",
    "verify",
]
