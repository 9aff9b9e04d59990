"""The IR of every stage: data model, grammar, printer, parser, verifier.

The parser, the printer and the data model need no torch; the names that do
(dtypes, the graph checks, the verifier, the body-op table) are imported at
their first use (PEP 562), so that `tirc fmt` and `tirc diff` start without
torch's seconds of import."""

import importlib

from .dtype_names import INT_DTYPES, is_float
from .errors import TircError, error_at, first_line, printable
from .op_policy import check_text_ops, named_ops, op_refusal, pure_ops
from .index import (
    eval_index,
    index_bounds,
    FloorDiv,
    IndexStyle,
    Mod,
    contiguous_strides,
    index_max,
    index_min,
    index_var,
    loop_vars,
    non_overlapping,
    render_index,
    simplify_index,
    storage_span,
    strided_index,
)
from .model import (
    STAGES,
    BodyOp,
    BufferType,
    Dep,
    Device,
    Enum,
    ExternNode,
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
from .equality import structurally_equal
from .parser import parse
from .printer import (
    VERSION,
    PrintedModule,
    format_attrs,
    format_fact,
    format_literal,
    print_ir,
    print_located,
    print_named,
    value_names,
)

# The facade's names that import torch: name -> its module.
_WITH_TORCH = {
    **dict.fromkeys(
        ("INT_DTYPES", "TORCH_DTYPES", "from_torch", "int_range", "is_float", "to_torch", "wrapped_int"),
        "dtypes",
    ),
    **dict.fromkeys(
        (
            "ENUMS",
            "Shapes",
            "enum_value",
            "flat_tensors",
            "module_device",
            "quiet_fake_tensors",
            "resolve_target",
            "shape_call",
            "to_torch_arg",
        ),
        "graph_check",
    ),
    **dict.fromkeys(("IndexOutOfRange", "check_index_arguments", "guards_indices"), "index_guards"),
    **dict.fromkeys(("BODY_OPS", "REDUCTION_RESULT", "empty_reduction", "body_op_takes"), "body_ops"),
    "verify": "verifier",
}


def __getattr__(name: str):
    module = _WITH_TORCH.get(name)
    if module is None:
        raise AttributeError(f"module 'ir_text' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "IndexOutOfRange",
    "check_index_arguments",
    "guards_indices",
    "BODY_OPS",
    "ENUMS",
    "BodyOp",
    "BufferType",
    "Dep",
    "Device",
    "Enum",
    "ExternNode",
    "FloorDiv",
    "GraphOp",
    "IndexStyle",
    "INT_DTYPES",
    "Input",
    "Kernel",
    "Loc",
    "LoopNode",
    "Mod",
    "Module",
    "NodeFacts",
    "REDUCTION_RESULT",
    "empty_reduction",
    "body_op_takes",
    "Refusal",
    "STAGES",
    "Shapes",
    "Symbol",
    "TORCH_DTYPES",
    "TensorType",
    "TircError",
    "VERSION",
    "Value",
    "WrapperLine",
    "contiguous_strides",
    "enum_value",
    "error_at",
    "first_line",
    "printable",
    "flat_tensors",
    "format_attrs",
    "format_fact",
    "format_literal",
    "from_torch",
    "eval_index",
    "index_max",
    "index_min",
    "index_bounds",
    "index_var",
    "int_range",
    "is_float",
    "loop_vars",
    "module_device",
    "non_overlapping",
    "parse",
    "print_ir",
    "print_named",
    "print_located",
    "PrintedModule",
    "quiet_fake_tensors",
    "render_index",
    "simplify_index",
    "resolve_target",
    "named_ops",
    "check_text_ops",
    "op_refusal",
    "pure_ops",
    "shape_call",
    "storage_span",
    "strided_index",
    "structurally_equal",
    "to_torch",
    "to_torch_arg",
    "value_names",
    "wrapped_int",
    "verify",
]
