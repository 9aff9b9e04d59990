"""The lark Transformer that builds a Module's dataclasses from the tree of
grammar.lark, beside it.

Names are resolved while transforming (lark visits children left to right,
so every definition is seen before its uses); an unknown name is an error at
its position. Stage rules are checked afterwards by `verifier.verify`.
"""

from __future__ import annotations

import math

import sympy
from lark import Token, Transformer_NonRecursive, v_args

from . import index as ix
from .dtype_names import IR_DTYPES
from .errors import TircError, number_text
from .printer import format_literal
from .text_bounds import (
    MAX_LIST_DEPTH,
    _call,
    _chain,
    _check_index,
    _check_length,
    _check_rank,
    _fail,
    _Index,
    _int64,
    _list_depth,
    _parts,
    _pos,
    _size,
    _sym,
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

# The module items that are sections of a later stage, and their keywords.
_SECTIONS = {"facts": "schedule", "fusion": "fusion", "wrapper": "wrapper", "layout": "layout"}
# The lower pass's layout decisions (lowering/layout.py).
_LAYOUTS = ("keep", "channels_last")


def _is_range(value) -> bool:
    """An input's `range`: two numbers (ints, floats, inf), not NaN; the
    verifier checks that they fit the input's dtype."""
    return (
        isinstance(value, tuple)
        and len(value) == 2
        and all(type(v) in (int, float) and v == v for v in value)
    )


def _unquote(token: str) -> str:
    body = token[1:-1]
    out, k = [], 0
    while k < len(body):
        ch = body[k]
        if ch == "\\" and k + 1 < len(body):
            nxt = body[k + 1]
            out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
            k += 2
        else:
            out.append(ch)
            k += 1
    return "".join(out)


def _is_anonymous(name: str) -> bool:
    """Numeric names (%0) and buffer names (%buf3) are renumbered by the printer."""
    return name.isdigit() or (name.startswith("buf") and name[3:].isdigit())


@v_args(meta=True)
# Not recursive: a file's nesting (a 100,000-term sum is a tree as deep) must not reach Python's stack.
class _Builder(Transformer_NonRecursive):
    def __init__(self):
        super().__init__()
        self._reset()

    def _reset(self) -> None:
        """No names defined yet: the state a module's parse starts from."""
        self.globals: dict[str, Value] = {}
        self.locals: dict[str, Value] = {}
        self.symbols: dict[str, Symbol] = {}
        self.in_body = False

    # ---- names
    def _define(self, token: Token, type_, scope: dict) -> Value:
        name = str(token)[1:]
        if name in scope or (scope is self.locals and name in self.globals):
            raise _fail(token, f"%{name} is defined twice")
        value = Value("" if _is_anonymous(name) else name, type_, _pos(token))
        scope[name] = value
        return value

    def _use(self, token: Token) -> Value:
        name = str(token)[1:]
        value = self.locals.get(name) or self.globals.get(name)
        if value is None:
            raise _fail(token, f"use of undefined value %{name}")
        return value

    # ---- module
    def start(self, meta, children):
        (version, stage, source, stage_pos), *items = children
        module = Module(
            stage=stage, source=source, version=version, options=(), inputs=[], stage_pos=stage_pos
        )
        updates = []  # a tuple in the module: collected first, as adding to one is quadratic
        for kind, payload in items:
            if kind in _SECTIONS:
                payload, pos = payload
                if _SECTIONS[kind] in module.sections_pos:
                    line, col = pos or (None, None)
                    raise TircError(f"a module has one '{_SECTIONS[kind]}' section", line=line, col=col)
                module.sections_pos[_SECTIONS[kind]] = pos
            if kind == "options":
                module.options, module.options_pos = payload
            elif kind == "input":
                module.inputs.append(payload)
            elif kind == "graph":
                module.graph.append(payload)
            elif kind == "node":
                module.nodes.append(payload)
            elif kind == "update":
                updates.append(payload)
            elif kind == "return":
                if module.outputs_pos is not None:
                    line, col = payload[1]
                    raise TircError("a module has one 'return'", line=line, col=col)
                module.outputs, module.outputs_pos = payload
            elif kind == "fusion":
                module.kernels, module.refusals = payload
            elif kind == "layout" and STAGES.index(stage) < STAGES.index("lower"):
                line, col = module.sections_pos["layout"] or (None, None)
                raise TircError(f"a {stage} dump has no layout decision (lower makes it)", line=line, col=col)
            else:
                setattr(module, kind, payload)
        module.updates = tuple(updates)
        return module

    def header(self, meta, children):
        version, stage, source = children
        if str(stage) not in STAGES:
            raise _fail(stage, f"unknown stage '{stage}' (expected one of {', '.join(STAGES)})")
        return str(version), str(stage), _unquote(source), _pos(stage)

    def options(self, meta, children):
        return "options", (children[0], _pos(meta))

    def layout_decision(self, meta, children):
        name, attrs = children
        if str(name) not in _LAYOUTS:
            raise _fail(name, f"unknown layout '{name}' (expected {' or '.join(_LAYOUTS)})")
        if [k for k, _ in attrs] != ["reason"] or not isinstance(attrs[0][1], str):
            raise _fail(name, 'a layout decision has one attribute, reason = "..."')
        return "layout", ((str(name), attrs), _pos(meta))

    def input_decl(self, meta, children):
        token, ttype, attrs = children
        attrs = dict(attrs)
        missing = [k for k in ("device", "seed", "strides") if k not in attrs]
        if missing:
            raise _fail(token, f"input {token} lacks attribute(s) {', '.join(missing)}")
        strides = attrs["strides"]
        if not (isinstance(strides, tuple) and all(isinstance(s, int) for s in strides)):
            raise _fail(token, f"input {token}: strides must be a list of integers")
        if len(strides) != len(ttype.shape):
            raise _fail(token, f"input {token}: {len(strides)} strides for a rank-{len(ttype.shape)} tensor")
        if any(not -(2**63) <= s < 2**63 for s in strides):
            raise _fail(token, f"input {token}: a stride is outside the range of int64")
        device = attrs["device"]
        device = device.name if isinstance(device, Device) else device
        if not isinstance(device, str):
            raise _fail(
                token,
                f'input {token}: device must be a string, "cpu" or "cuda", not {format_literal(device)}',
            )
        if type(attrs["seed"]) is not int:
            raise _fail(token, f"input {token}: seed must be an integer, not {format_literal(attrs['seed'])}")
        if not -(2**63) <= attrs["seed"] < 2**64:  # what torch.Generator.manual_seed takes
            raise _fail(token, f"input {token}: seed {attrs['seed']} is outside [-2**63, 2**64)")
        extra = sorted(set(attrs) - {"device", "seed", "strides", "sha256", "range"})
        if extra:
            raise _fail(token, f"input {token}: unknown attribute '{extra[0]}'")
        sha256 = attrs.get("sha256")
        if sha256 is not None and not (
            isinstance(sha256, str) and len(sha256) == 64 and all(c in "0123456789abcdef" for c in sha256)
        ):
            raise _fail(token, f"input {token}: sha256 must be 64 lowercase hex digits")
        buffer_type = BufferType(ttype.dtype, ttype.shape, tuple(strides))
        value = self._define(token, buffer_type, self.globals)
        value_range = attrs.get("range")
        if value_range is not None and not _is_range(value_range):
            raise _fail(token, f"input {token}: range must be a list of two numbers [lo, hi]")
        return "input", Input(value, device, attrs["seed"], sha256, value_range, _pos(token))

    def graph_op(self, meta, children):
        results, target, args, attrs, types, loc = children
        if len(types) != len(results):
            raise _fail(meta, f"{len(results)} result(s) but {len(types)} type(s)")
        values = tuple(self._define(t, ty, self.globals) for t, ty in zip(results, types))
        return "graph", GraphOp(values, str(target), tuple(args or ()), attrs or (), loc, _pos(meta))

    def loop_node(self, meta, children):
        results, kind, ranges, attrs, ttype, strides, *rest = children
        *body, loc = rest
        if len(results) != 1:
            raise _fail(meta, "a loop node defines exactly one buffer")
        if not kind.startswith("loop."):
            raise _fail(kind, f"'{kind}' is not a loop op (expected loop.pointwise)")
        if len(strides) != len(ttype.shape):
            raise _fail(meta, f"{len(strides)} strides for a rank-{len(ttype.shape)} buffer")
        self.locals = {}
        value = self._define(results[0], BufferType(ttype.dtype, ttype.shape, strides), self.globals)
        iter_ranges, red_ranges = ranges
        return "node", LoopNode(
            value, str(kind)[5:], iter_ranges, red_ranges, attrs or (), list(body), loc, _pos(meta)
        )

    def extern_node(self, meta, children):
        results, target, args, attrs, layouts, loc = children
        if len(layouts) != len(results):
            raise _fail(meta, f"{len(results)} result(s) but {len(layouts)} layout(s)")
        values = tuple(self._define(t, layout, self.globals) for t, layout in zip(results, layouts))
        return "node", ExternNode(values, str(target), tuple(args or ()), attrs or (), loc, _pos(meta))

    def update_stmt(self, meta, children):
        target, value = children
        return "update", (self._use(target), self._use(value))

    def layout_list(self, meta, children):
        return list(children)

    def layout(self, meta, children):
        ttype, strides = children
        if len(strides) != len(ttype.shape):
            raise _fail(meta, f"{len(strides)} strides for a rank-{len(ttype.shape)} buffer")
        return BufferType(ttype.dtype, ttype.shape, strides)

    def return_stmt(self, meta, children):
        values = children[0] or []
        return "return", (tuple(self._use(v) for v in values), _pos(meta))

    def results(self, meta, children):
        return list(children)

    def values(self, meta, children):
        return list(children)

    # ---- types and literals
    def type_list(self, meta, children):
        return list(children)

    def tensor_type(self, meta, children):
        dtype, dims = children
        if str(dtype) not in IR_DTYPES:
            raise _fail(dtype, f"unknown dtype '{dtype}'")
        shape = tuple(dims or ())
        _check_rank(dtype, shape)
        if any(d < 0 for d in shape):
            raise _fail(dtype, "negative size in a shape")
        # ATen counts elements in int64 (and refuses the shape when the sizes
        # before a zero overflow it): no shape may have more, zeros left out.
        count = math.prod(d for d in shape if d)
        if count >= 2**63:
            zeros = " (zeros left out)" if 0 in shape else ""
            raise _fail(
                dtype,
                f"{dtype}{list(shape)}: the sizes multiply to {number_text(count)}{zeros},"
                " more than int64 holds",
            )
        return TensorType(str(dtype), shape)

    def int_list(self, meta, children):
        return tuple(children[0] or ())

    def ints(self, meta, children):
        # Sizes, strides and ranges: what torch and the generated code index with.
        _check_length(meta, children)
        return [_int64(c, "a size or stride") for c in children]

    def loc(self, meta, children):
        return Loc(_unquote(children[0]), _int64(children[1], "a line number"))

    def attrs(self, meta, children):
        pairs = [c for c in children if c is not None]
        _check_length(meta, pairs)
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise _fail(meta, f"attribute '{key}' given twice")
            seen.add(key)
        return tuple(sorted(pairs, key=lambda kv: kv[0]))

    def attr(self, meta, children):
        return str(children[0]), children[1]

    def args(self, meta, children):
        return list(children)

    def value_ref(self, meta, children):
        return self._use(children[0])

    def int_lit(self, meta, children):
        return _int64(children[0], "the IR's integers are i64")

    def float_lit(self, meta, children):
        # As Python reads it: past float64's range is inf (1e999, as the
        # printer's inf), below it 0.0; the checks of each use apply to those.
        return float(children[0])

    def string_lit(self, meta, children):
        return _unquote(children[0])

    def true_lit(self, meta, children):
        return True

    def false_lit(self, meta, children):
        return False

    def none_lit(self, meta, children):
        return None

    def inf_lit(self, meta, children):
        return math.inf

    def ninf_lit(self, meta, children):
        return -math.inf

    def nan_lit(self, meta, children):
        return math.nan

    def enum_lit(self, meta, children):
        return Enum(str(children[0]))

    def symbol_lit(self, meta, children):
        return Symbol(str(children[0])[1:])

    def device_lit(self, meta, children):
        return Device(_unquote(children[0]))

    def list_lit(self, meta, children):
        items = tuple(children[0] or ())
        _check_length(meta, items)
        if _list_depth(items) > MAX_LIST_DEPTH:
            raise _fail(meta, f"list literal nests deeper than {MAX_LIST_DEPTH} levels (tirc's limit)")
        return items

    # ---- loop dialect
    def ranges(self, meta, children):
        iters, reds = children
        iters, reds = tuple(iters or ()), tuple(reds or ())
        _check_rank(meta, iters)
        _check_rank(meta, reds)
        for prefix, group in (("i", iters), ("r", reds)):
            for k, (name, _) in enumerate(group):
                if name != f"{prefix}{k}":
                    raise _fail(meta, f"loop variable '{name}' should be named '{prefix}{k}'")
        return tuple(s for _, s in iters), tuple(s for _, s in reds)

    def range_list(self, meta, children):
        return list(children)

    def loop_range(self, meta, children):
        name, size = children
        size = _int64(size, "a loop range")
        if size < 0:
            raise _fail(children[1], "negative loop range")
        return str(name), size

    def load_op(self, meta, children):
        result, buffer, index, dtype = children
        source = self._use(buffer)
        value = self._define(result, str(dtype), self.locals)
        return BodyOp(value, "load", (source,), (("index", _sym(index)),), _pos(meta))

    def index_op(self, meta, children):
        result, index, dtype = children
        value = self._define(result, str(dtype), self.locals)
        return BodyOp(value, "index", (), (("index", _sym(index)),), _pos(meta))

    def store_op(self, meta, children):
        return BodyOp(None, "store", (self._use(children[0]),), (), _pos(meta))

    def generic_op(self, meta, children):
        result, name, args, attrs, dtype = children
        args = list(args or ())
        if not all(isinstance(a, Value) for a in args):
            raise _fail(meta, f"operands of '{name}' must be %values (put literals in attributes)")
        value = self._define(result, str(dtype), self.locals)
        return BodyOp(value, str(name), tuple(args), attrs or (), _pos(meta))

    # Index expressions (see _Index): sums and products stay open until used.
    def idx_add(self, meta, c):
        return _chain(meta, sympy.Add, c[0], c[1], [_sym(c[1])])

    def idx_sub(self, meta, c):
        return _chain(meta, sympy.Add, c[0], c[1], [-_sym(c[1])])

    def idx_mul(self, meta, c):
        return _chain(meta, sympy.Mul, c[0], c[1], list(_parts(c[1], sympy.Mul)))

    def idx_int(self, meta, c):
        return sympy.Integer(_int64(c[0], "an index constant"))

    def idx_var(self, meta, c):
        return ix.index_var(str(c[0]))

    def idx_neg(self, meta, c):
        depth, nodes = _size(c[0])
        _check_index(meta, depth + 1, nodes + 1)
        return _Index(sympy.Mul, [sympy.Integer(-1), *_parts(c[0], sympy.Mul)], depth + 1, nodes + 1)

    def idx_floordiv(self, meta, c):
        return _call(meta, ix.FloorDiv, *c)

    def idx_mod(self, meta, c):
        return _call(meta, ix.Mod, *c)

    def idx_min(self, meta, c):
        return _call(meta, ix.index_min, *c)

    def idx_max(self, meta, c):
        return _call(meta, ix.index_max, *c)

    # ---- schedule, fusion, memplan
    def schedule(self, meta, children):
        return "facts", (list(children), _pos(meta))

    def fact(self, meta, children):
        node, numel, rnumel, reads, writes, users = children
        return NodeFacts(
            self._use(node),
            (_int64(numel, "a group size"), _int64(rnumel, "a group size")),
            tuple(reads or ()),
            tuple(users or ()),
            _pos(meta),
            tuple(writes or ()),
        )

    def deps(self, meta, children):
        return list(children)

    def mem_dep(self, meta, children):
        return Dep(self._use(children[0]), _sym(children[1]))

    def star_dep(self, meta, children):
        return Dep(self._use(children[0]), None)

    def users(self, meta, children):
        return list(children)

    def fusion(self, meta, children):
        kernels = [c for c in children if isinstance(c, Kernel)]
        refusals = [c for c in children if isinstance(c, Refusal)]
        return "fusion", ((kernels, refusals), _pos(meta))

    def nests(self, meta, children):
        return list(children)

    def kernel(self, meta, children):
        symbol, nests, attrs = children
        name = str(symbol)[1:]
        if name in self.symbols:
            raise _fail(symbol, f"kernel @{name} is defined twice")
        self.symbols[name] = Symbol(name)
        nodes = tuple(self._use(v) for nest in nests for v in nest)
        sizes = tuple(len(nest) for nest in nests) if len(nests) > 1 else None
        return Kernel(self.symbols[name], nodes, attrs or (), _pos(meta), sizes)

    def refusal(self, meta, children):
        first, second, attrs = children
        reason = dict(attrs).get("reason")
        if not isinstance(reason, str):
            raise _fail(meta, "refused(...) needs a string attribute 'reason'")
        return Refusal(self._use(first), self._use(second), reason, _pos(meta))

    def wrapper(self, meta, children):
        return "wrapper", (list(children), _pos(meta))

    def alloc_line(self, meta, children):
        return WrapperLine("alloc", None, (self._use(children[0]),), (), _pos(meta))

    def free_line(self, meta, children):
        return WrapperLine("free", None, (self._use(children[0]),), (), _pos(meta))

    def reuse_line(self, meta, children):
        old, new = children
        return WrapperLine("reuse", None, (self._use(old),), (self._use(new),), _pos(meta))

    def launch_line(self, meta, children):
        return self._kernel_call(meta, children, "launch")

    def extern_line(self, meta, children):
        return self._kernel_call(meta, children, "extern")

    def _kernel_call(self, meta, children, op: str):
        symbol, ins, outs = children
        name = str(symbol)[1:]
        if name not in self.symbols:
            raise _fail(symbol, f"launch of undefined kernel @{name}")
        return WrapperLine(
            op,
            self.symbols[name],
            tuple(self._use(v) for v in ins or ()),
            tuple(self._use(v) for v in outs or ()),
            _pos(meta),
        )
