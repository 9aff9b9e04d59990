"""A deliberate miscompile, for testing the repro tools (`--option
inject_fault=codegen:miscompile[:OP[@LINE][:N]]`): one body op of the module is rendered
as another op of the same shape, so the generated code differs from the IR
while every dump stays as the pipeline made it. The fault is an option, and
options are printed in every dump header, so a replay of any dump, or of a
reduced one, rebuilds the same corruption."""

from __future__ import annotations

from ir_text import LoopNode, Module, TircError, is_float, parse, print_ir

# Each op's stand-in: same arity, same operand and result dtypes.
CORRUPTIONS = {
    "add": "sub",
    "sub": "add",
    "mul": "add",
    "truediv": "mul",
    "maximum": "minimum",
    "minimum": "maximum",
    "neg": "abs",
    "abs": "neg",
    "exp": "expm1",
    "expm1": "exp",
    "log": "log1p",
    "log1p": "log",
    "sqrt": "rsqrt",
    "rsqrt": "sqrt",
    "sin": "cos",
    "cos": "sin",
    "tanh": "sigmoid",
    "sigmoid": "tanh",
    "erf": "tanh",
    "reciprocal": "neg",
    "lt": "gt",
    "gt": "lt",
    "le": "ge",
    "ge": "le",
    "eq": "ne",
    "ne": "eq",
}


def _eligible(op, wanted: str) -> bool:
    if op.op not in CORRUPTIONS or (wanted and op.op != wanted):
        return False
    return all(is_float(v.type) for v in op.operands)


def miscompiled(module: Module, wanted: str = "", nth: int = 1, line: int | None = None) -> Module:
    """A copy of `module` with one body op replaced by its stand-in: the
    first that has one, or the `nth` named `wanted` (in node order), among
    the nodes from source line `line` when given: a line names one place of
    the model however much of the program around it a reducer removes.
    `module` is unchanged."""
    copy = parse(print_ir(module), "miscompile")
    seen = 0
    for node in copy.nodes:
        if not isinstance(node, LoopNode) or (
            line is not None and (node.loc is None or node.loc.line != line)
        ):
            continue
        for op in node.body:
            if _eligible(op, wanted):
                seen += 1
                if seen == nth:
                    op.op = CORRUPTIONS[op.op]
                    return copy
    if not wanted:
        what = "no float body op with a corruption"
    else:
        what = f"no float '{wanted}' op" if seen == 0 else f"only {seen} float '{wanted}' op(s), not {nth},"
        what += f" on line {line}" if line is not None else ""
    raise TircError(f"inject_fault=codegen:miscompile: the program has {what} to corrupt")
