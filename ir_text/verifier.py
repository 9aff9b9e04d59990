"""Structural and type rules of the IR, independent of any pass.

Derived facts (schedule facts, fusion legality, memory plans) are checked by
the stage that derives them (see scheduler/), through the stage table.
"""

from __future__ import annotations

import math
import re

import torch

from .body_ops import BODY_OPS, REDUCTION_ACCEPTS, REDUCTION_RESULT, REDUCTIONS, SCANS, body_op_takes
from .dtypes import INT_DTYPES, TORCH_DTYPES, int_range, is_float, to_torch
from .errors import TircError, error_at
from .index import eval_index, index_bounds, index_magnitude, index_symbols, non_overlapping
from .graph_check import check_call, check_graph, input_shapes
from .model import STAGES, BufferType, Enum, Module, Value
from .printer import VERSION, format_literal

# Reduced-precision floats are storage types: loaded, converted, stored. The
# arithmetic happens in float32 (as the lowering emits it), so every backend
# and the interpreter round at the same places.
STORAGE_ONLY = frozenset({"f16", "bf16"})
_STORAGE_OPS = frozenset({"load", "store", "to_dtype", "constant", "where"})
# Attributes each body op takes (all others are errors).
_BODY_ATTRS = {
    "load": {"index"},
    "constant": {"value"},
    "to_dtype": {"dtype"},
    "index": {"index"},
    "indirect": {"size", "wrap"},
    "reduce": {"reduction"},
    "scan": {"dim", "reduction"},
}
# The op each loop kind must hold exactly once (None: neither reduce nor scan).
_KIND_OP = {"pointwise": None, "reduction": "reduce", "scan": "scan"}

# Sections each stage must have (and no later stage's).
_SECTIONS = {
    "capture": (),
    "lower": (),
    "schedule": ("facts",),
    "fusion": ("kernels",),
    "memplan": ("kernels", "wrapper"),
}
_ALL_SECTIONS = ("facts", "kernels", "wrapper")


# The attributes a loop node may carry, each a string, with what it says.
# `factored` labels the partials of a reduction the schedule stage factored
# in two (scheduler/factor.py), with the rule that did it; the node itself
# is checked as any other.
LOOP_ATTRS = {
    "factored": "the rule that factored the reduction, e.g. [row-aligned]",
    "origin": "the ATen op the node came from",
}


def verify(module: Module) -> Module:
    """Check `module` against the rules of its stage; raise TircError on the first problem."""
    if module.version != VERSION:
        raise TircError(
            f"this file is tirc {module.version}; this tirc reads version {VERSION}", line=1, col=1
        )
    _check_sections(module)
    _check_inputs(module)
    if module.stage == "capture":
        check_graph(module)
    else:
        shapes = input_shapes(module)
        for node in module.nodes:
            if node.kind == "extern":
                _check_extern(node, shapes)
            else:
                _check_loop_node(node, module)
                shapes.bind(node.result)
    _check_updates(module)
    return module


def _check_updates(m: Module) -> None:
    inputs = {id(i.value) for i in m.inputs}
    line, col = m.outputs_pos or (None, None)
    seen: set[int] = set()
    for target, value in m.updates:
        if id(target) not in inputs:
            raise TircError("'update' names a value that is not an input", line=line, col=col)
        if id(target) in seen:
            raise TircError("an input is updated twice", line=line, col=col)
        seen.add(id(target))
        a, b = target.type, value.type
        if (a.dtype, tuple(a.shape)) != (b.dtype, tuple(b.shape)):
            raise TircError(
                f"'update' of a {a.dtype}{list(a.shape)} input with a {b.dtype}{list(b.shape)} value",
                line=line,
                col=col,
            )


def _check_extern(node, shapes) -> None:
    for v in node.results:
        _check_layout(node, v.type)
    check_call(node, shapes)


def _check_sections(m: Module) -> None:
    if m.stage == "capture" and m.nodes:
        raise error_at(m.nodes[0].pos, "loop nodes in a capture-stage module")
    if m.stage != "capture" and m.graph:
        raise error_at(m.graph[0].pos, f"graph ops in a {m.stage}-stage module")
    wanted = _SECTIONS[m.stage]
    for section in _ALL_SECTIONS:
        present = getattr(m, section) is not None
        keyword = {"facts": "schedule", "kernels": "fusion", "wrapper": "wrapper"}[section]
        if section in wanted and not present:
            # Located at the header's stage: the stage or the section is wrong.
            raise error_at(m.stage_pos, f"a {m.stage}-stage module needs a '{keyword}' section")
        if section not in wanted and present:
            raise error_at(
                m.sections_pos.get(keyword),
                f"a {m.stage}-stage module has a '{keyword}' section, which belongs to another stage",
            )
    if m.stage not in STAGES:
        raise TircError(f"unknown stage {m.stage}")


_DEVICE = re.compile(r"cpu|cuda(:\d{1,4})?")


def _check_inputs(m: Module) -> None:
    for inp in m.inputs:
        t = inp.value.type
        if any(s < 0 for s in t.strides):
            raise error_at(inp.pos, "negative input stride")
        _check_storage(inp.pos, t, f"input %{inp.value.hint}: ")
        if not _DEVICE.fullmatch(inp.device):
            raise error_at(inp.pos, f'unknown device {format_literal(inp.device)} (expected "cpu" or "cuda")')
        if inp.range is not None:
            _check_range(inp)


def _check_range(inp) -> None:
    """`range = [lo, hi]`, which seeded replay draws from: integers in [lo,
    hi) that the dtype holds, floats in [lo, hi]; lo < hi, so it is not empty."""
    lo, hi = inp.range
    dtype = inp.value.type.dtype
    where = f"input %{inp.value.hint}: range {format_literal(inp.range)}"
    if dtype in INT_DTYPES:
        if type(lo) is not int or type(hi) is not int:
            raise error_at(inp.pos, f"{where}: an {dtype} input's range takes integers")
        least, greatest = int_range(dtype)
        if lo < least or hi - 1 > greatest:
            raise error_at(inp.pos, f"{where}: {dtype} holds [{least}, {greatest}] only")
    elif not is_float(dtype):
        raise error_at(inp.pos, f"{where}: a range applies to integer and float inputs, not {dtype}")
    if not lo < hi:
        raise error_at(inp.pos, f"{where}: lo must be less than hi")


def _fail(op, message: str) -> TircError:
    return error_at(op.pos, message)


def _check_loop_node(node, m: Module) -> None:
    t: BufferType = node.result.type
    if node.kind not in _KIND_OP:
        known = ", ".join(f"loop.{k}" for k in _KIND_OP)
        raise _fail(node, f"unknown loop kind 'loop.{node.kind}' (known: {known}, extern)")
    if node.reduction_ranges and node.kind != "reduction":
        raise _fail(node, f"a loop.{node.kind} node has no reduction ranges")
    if tuple(node.ranges) != tuple(t.shape):
        raise _fail(node, f"loop ranges {list(node.ranges)} do not match the buffer shape {list(t.shape)}")
    # Kernels count iterations in int64 (as ATen counts elements, zeros left out).
    iterations = math.prod(s for s in (*node.ranges, *node.reduction_ranges) if s)
    if iterations >= 2**63:
        raise _fail(node, f"the loop ranges multiply to {iterations} iterations, more than int64 holds")
    _check_layout(node, t)
    known = LOOP_ATTRS if node.kind == "reduction" else {"origin": LOOP_ATTRS["origin"]}
    for key, value in node.attrs:
        if key not in known:
            raise _fail(node, f"unknown attribute '{key}' on loop.{node.kind} (known: {', '.join(known)})")
        if not isinstance(value, str):
            raise _fail(node, f"{key} must be a string ({known[key]})")
    outer = {f"i{k}": s for k, s in enumerate(node.ranges)}
    scope = dict(outer)
    scope.update({f"r{k}": s for k, s in enumerate(node.reduction_ranges)})
    local: set[int] = set()
    stores = [op for op in node.body if op.op == "store"]
    if not node.body or node.body[-1].op != "store" or len(stores) != 1:
        raise _fail(stores[1] if len(stores) > 1 else node, "a loop body has one 'store', at its end")
    _check_kind_op(node)
    indirect = 0
    for op in node.body:
        _check_body_op(op, node, scope, local)
        if op.op == "load":
            _check_reads_written(op, scope, m)
        if op.op == "indirect":
            name = f"ind{indirect}"
            if op.result.hint != name:
                raise _fail(op, f"the indirect op number {indirect} of a body must be named %{name}")
            scope[name] = op.attr("size")
            indirect += 1
        if op.op == "reduce":
            # The epilogue sees one value per output element: the reduction's
            # result and what it computes from it, never the r-variables.
            local, scope = set(), dict(outer)
        if op.result is not None:
            local.add(id(op.result))


# A buffer whose strides leave holes in its storage (a padded layout) has
# elements nothing writes; a load of one reads uninitialized memory, which
# differs between runs and between the compiled code and the interpreter.
# Such loads are checked element by element up to this many storage
# elements and reads (a load past either is not checked); dense layouts, the
# only ones passes produce, need no check.
_HOLES_CHECKED_UP_TO = 2**22


def _check_reads_written(op, scope: dict[str, int], m: Module) -> None:
    """Only buffers of loop nodes, which write their elements and nothing
    else, are checked (an input's storage is the caller's, an extern's ATen's)."""
    source = op.operands[0]
    t = source.type
    numel = math.prod(t.shape)
    if numel == 0 or t.storage_size == numel:
        return  # a dense buffer is written whole
    if not any(n.result is source for n in m.nodes if n.kind != "extern"):
        return
    symbols = sorted(index_symbols(op.attr("index")))
    if any(s.startswith("ind") for s in symbols):
        return  # data-dependent: which elements it reads is not known here
    if t.storage_size > _HOLES_CHECKED_UP_TO or math.prod(scope[s] for s in symbols) > _HOLES_CHECKED_UP_TO:
        return
    written = torch.zeros(t.storage_size, dtype=torch.bool)
    offsets = torch.zeros((), dtype=torch.int64)
    for k, (size, stride) in enumerate(zip(t.shape, t.strides)):
        offsets = offsets + torch.arange(size).view([-1] + [1] * (len(t.shape) - 1 - k)) * stride
    written[offsets.reshape(-1)] = True
    env = {s: torch.arange(scope[s]).view([-1] + [1] * (len(symbols) - 1 - k)) for k, s in enumerate(symbols)}
    read = eval_index(op.attr("index"), env).reshape(-1)
    unwritten = read[~written[read]]
    if unwritten.numel():
        raise _fail(
            op,
            f"the load reads element {int(unwritten.min())} of its source's storage, which nothing"
            f" writes: the source's strides {list(t.strides)} leave holes there",
        )


def _check_kind_op(node) -> None:
    wanted = _KIND_OP[node.kind]
    for name in ("reduce", "scan"):
        ops = [op for op in node.body if op.op == name]
        if name != wanted and ops:
            raise _fail(
                ops[0], f"'{name}' belongs in a loop.{'reduction' if name == 'reduce' else 'scan'} node"
            )
        if name == wanted and len(ops) != 1:
            raise _fail(ops[1] if ops else node, f"a loop.{node.kind} body has exactly one '{name}'")


def _check_layout(node, t: BufferType) -> None:
    if any(st < 0 for st in t.strides):
        raise _fail(node, "negative buffer stride")
    if not non_overlapping(t.shape, t.strides):
        raise _fail(node, f"strides {list(t.strides)} make elements of the buffer overlap")
    _check_storage(node.pos, t)


def _check_storage(pos, t: BufferType, where: str = "") -> None:
    """A storage's size in bytes must fit int64, as ATen checks when it
    allocates (fake tensors do not, so the verifier does)."""
    span = t.storage_size
    size = span * to_torch(t.dtype).itemsize
    if size >= 2**63:
        raise error_at(
            pos,
            f"{where}strides {list(t.strides)} of {t.dtype}{list(t.shape)} span {span} elements"
            f" ({size} bytes); a storage must fit in 2**63 - 1 bytes",
        )


def _operand_dtype(op, v: Value, local: set[int]) -> str:
    if id(v) not in local:
        raise _fail(op, f"operand of '{op.op}' is not a value of this loop body")
    return v.type


def _check_body_op(op, node, scope: dict[str, int], local: set[int]) -> None:
    spec = BODY_OPS.get(op.op)
    if spec is None:
        raise _fail(op, f"unknown loop-body op '{op.op}'")
    if len(op.operands) != spec.arity:
        raise _fail(op, f"'{op.op}' takes {spec.arity} operand(s), got {len(op.operands)}")
    if op.result is not None and op.result.type not in TORCH_DTYPES:
        raise _fail(op, f"unknown dtype '{op.result.type}'")
    extra = sorted(set(dict(op.attrs)) - _BODY_ATTRS.get(op.op, set()))
    if extra:
        raise _fail(op, f"'{op.op}' takes no attribute '{extra[0]}'")
    _RULES[spec.rule](op, node, scope, local)
    if op.op not in _STORAGE_OPS and op.result is not None:
        reduced = {v.type for v in op.operands} & STORAGE_ONLY
        if reduced or op.result.type in STORAGE_ONLY:
            dtype = sorted(reduced)[0] if reduced else op.result.type
            raise _fail(
                op, f"'{op.op}' on {dtype}: convert {dtype} values to f32 (to_dtype) before arithmetic"
            )


def _rule_load(op, node, scope, local):
    source = op.operands[0]
    if not isinstance(source.type, BufferType):
        raise _fail(op, "load reads from an input or a buffer, not a body value")
    index = op.attr("index")
    unknown = index_symbols(index) - set(scope)
    if unknown:
        raise _fail(op, f"index uses '{sorted(unknown)[0]}', which is not a loop variable here")
    storage = source.type.storage_size
    try:
        lo, hi = index_bounds(index, scope)
    except ValueError as err:
        raise _fail(op, f"bad index: {err}") from None
    # First: bounds past int64 may have more digits than Python prints (4300).
    _check_int64(op, index, scope)
    if math.prod(scope.values()) > 0 and (lo < 0 or hi >= storage):
        raise _fail(op, f"index range [{lo}, {hi}] is outside the {storage} elements of the source")
    if op.result.type != source.type.dtype:
        raise _fail(op, f"load of a {source.type.dtype} source typed {op.result.type}")


def _rule_index(op, node, scope, local):
    unknown = index_symbols(op.attr("index")) - set(scope)
    if unknown:
        raise _fail(op, f"index uses '{sorted(unknown)[0]}', which is not a loop variable here")
    if op.result.type != "i64":
        raise _fail(op, "an index value is i64")
    try:
        index_bounds(op.attr("index"), scope)  # refuses a divisor that may be zero or negative
    except ValueError as err:
        raise _fail(op, f"bad index: {err}") from None
    _check_int64(op, op.attr("index"), scope)


def _check_int64(op, index, scope) -> None:
    """Kernels compute index arithmetic in int64: no value on the way may
    overflow it, even when the final index is in range (`floordiv(N*i0, N)`)."""
    if index_magnitude(index, scope) >= 2**63:
        raise _fail(op, "index arithmetic may overflow int64 (a partial sum or product reaches 2**63)")


def _rule_indirect(op, node, scope, local):
    dtype = _operand_dtype(op, op.operands[0], local)
    size = op.attr("size")
    if dtype not in INT_DTYPES:
        raise _fail(op, f"indirect takes an integer value, not {dtype}")
    if type(size) is not int or size <= 0:
        raise _fail(op, "indirect needs {size = N} with N > 0 (the extent it indexes)")
    if op.result.type != "i64":
        raise _fail(op, "an indirect index is i64")
    if type(op.attr("wrap", True)) is not bool:
        raise _fail(
            op, "indirect's {wrap = B} is true or false (whether a negative value counts from the end)"
        )


def _rule_reduce(op, node, scope, local):
    dtype = _operand_dtype(op, op.operands[0], local)
    kind = op.attr("reduction")
    if not isinstance(kind, Enum) or kind.name not in REDUCTIONS:
        raise _fail(op, f"reduce needs {{reduction = K}} with K one of {', '.join(REDUCTIONS)}")
    accepts = REDUCTION_ACCEPTS.get(kind.name)
    if accepts is not None and dtype not in accepts:
        if accepts == {"b8"}:
            raise _fail(op, f"reduce {kind.name} takes b8 values, not {dtype}")
        raise _fail(op, f"reduce {kind.name} does not take {dtype} values")
    want = REDUCTION_RESULT.get(kind.name, dtype)
    if op.result.type != want:
        raise _fail(op, f"reduce {kind.name} of {dtype} gives {want}, not {op.result.type}")


def _rule_scan(op, node, scope, local):
    dtype = _operand_dtype(op, op.operands[0], local)
    kind, dim = op.attr("reduction"), op.attr("dim")
    if not isinstance(kind, Enum) or kind.name not in SCANS:
        raise _fail(op, f"scan needs {{reduction = K}} with K one of {', '.join(SCANS)}")
    if type(dim) is not int or not 0 <= dim < len(node.ranges):
        raise _fail(op, f"scan needs {{dim = D}} with 0 <= D < {len(node.ranges)} (a loop variable)")
    if op.result.type != dtype:
        raise _fail(op, f"scan of {dtype} gives {dtype}, not {op.result.type}")


def _rule_store(op, node, scope, local):
    dtype = _operand_dtype(op, op.operands[0], local)
    if dtype != node.result.type.dtype:
        raise _fail(op, f"store of a {dtype} value into a {node.result.type.dtype} buffer")


def _rule_constant(op, node, scope, local):
    value = op.attr("value")
    dtype = op.result.type
    ok = (
        isinstance(value, bool)
        if dtype == "b8"
        else isinstance(value, float) if is_float(dtype) else type(value) is int
    )
    if not ok:
        raise _fail(op, f"constant {{value = ...}} does not fit its type {dtype}")
    if dtype not in INT_DTYPES:
        return
    low, high = int_range(dtype)
    if not low <= value <= high:
        raise _fail(op, f"constant {value} is outside the range of {dtype} [{low}, {high}]")


def _rule_cast(op, node, scope, local):
    _operand_dtype(op, op.operands[0], local)
    if getattr(op.attr("dtype"), "name", None) != op.result.type:
        raise _fail(op, "to_dtype needs {dtype = D} equal to its result type")


def _rule_where(op, node, scope, local):
    cond, a, b = (_operand_dtype(op, v, local) for v in op.operands)
    if cond != "b8":
        raise _fail(op, f"where's condition is {cond}, not b8")
    if not a == b == op.result.type:
        raise _fail(op, f"where's branches ({a}, {b}) and result ({op.result.type}) differ")


def _typed(result_rule):
    def rule(op, node, scope, local):
        dtypes = [_operand_dtype(op, v, local) for v in op.operands]
        if len(set(dtypes)) > 1:
            raise _fail(op, f"'{op.op}' operands have different dtypes: {', '.join(dtypes)}")
        if not body_op_takes(op.op, dtypes[0]):
            raise _fail(op, f"'{op.op}' does not take {dtypes[0]} operands")
        want = result_rule(dtypes[0])
        if op.result.type != want:
            raise _fail(op, f"'{op.op}' of {dtypes[0]} gives {want}, not {op.result.type}")

    return rule


_RULES = {
    "load": _rule_load,
    "store": _rule_store,
    "constant": _rule_constant,
    "cast": _rule_cast,
    "where": _rule_where,
    "index": _rule_index,
    "indirect": _rule_indirect,
    "reduce": _rule_reduce,
    "scan": _rule_scan,
    "same": _typed(lambda d: d),
    "numeric": _typed(lambda d: d),
    "float": _typed(lambda d: d),
    "bitwise": _typed(lambda d: d),
    "compare": _typed(lambda d: "b8"),
    "logical": _typed(lambda d: "b8"),
}
