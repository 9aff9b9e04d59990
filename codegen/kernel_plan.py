"""Backend-neutral statements of one fused kernel, which each backend renders.

Loads of a buffer computed inside the same kernel become the producer's
stored value (fusion checked that the indices match); a buffer is written to
memory only when it leaves the kernel.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, replace

import sympy

from ir_text import INT_DTYPES, Module, empty_reduction, index_var, value_names
from scheduler import extern_kernels, kernel_io, kernel_space, users


@dataclass(frozen=True)
class Load:
    var: str
    source: str
    index: object
    dtype: str


@dataclass(frozen=True)
class Compute:
    var: str
    op: str
    args: tuple[str, ...]
    dtype: str
    attrs: tuple


_INT_DIVISIONS = frozenset({"floor_divide", "remainder", "fmod"})


def checked_op(op: str, dtype: str) -> bool:
    """An op (of a body or a plan, with its result dtype) whose values the C++
    kernel checks: an indirect index, an integer division (by 0?)."""
    return op == "indirect" or (op in _INT_DIVISIONS and dtype in INT_DTYPES)


def _check_sites(nodes) -> dict[int, int]:
    """id(node) -> site, for the nodes of a kernel (in order) that have a
    checked op: their position among those. A node is one ATen op (its
    `origin`, its `loc`), so its site names the op whatever else the
    kernel fused; numbered over the whole kernel, so that its loop nests
    share one error slot."""
    checked = [n for n in nodes if any(_checked(op) for op in n.body)]
    return {id(n): k for k, n in enumerate(checked)}


def _checked(op) -> bool:
    return op.result is not None and checked_op(op.op, op.result.type)


@dataclass(frozen=True)
class Store:
    target: str
    index: object
    var: str
    dtype: str


@dataclass(frozen=True)
class Reduce:
    """Accumulate `arg` over the r-variables; `var` holds the result afterwards.
    Statements before it run per (i, r), statements after it per output element."""

    var: str
    kind: str
    arg: str
    dtype: str  # the result's
    arg_dtype: str


# Reductions of b8 values as the logical ones they are (a bool sum is true
# when any value is): g++ vectorized `omp simd reduction(+)` of a bool
# accumulator as byte additions and stored bools of 2 and more.
_B8_REDUCTIONS = {"sum": "any", "max": "any", "prod": "all", "min": "all"}


@dataclass(frozen=True)
class Scan:
    """The inclusive scan of `arg` along loop variable `dim`."""

    var: str
    kind: str
    arg: str
    dtype: str
    dim: int


@dataclass(frozen=True)
class Loop:
    """One pass over the r-variables, per row: its statements run per (row,
    reduced element); each Reduce in it defines its var after the pass."""

    statements: tuple


@dataclass(frozen=True)
class KernelPlan:
    name: str
    ranges: tuple[int, ...]
    reduction: tuple[int, ...]  # r-variable ranges (a reduction kernel), else ()
    params: tuple[tuple[str, str], ...]  # (name, dtype): inputs then outputs
    num_inputs: int
    # Per row (each point of `ranges`), in order: statements, and Loops over
    # the r-variables. A pointwise or scan kernel has no Loop.
    steps: tuple
    nodes: tuple[str, ...]  # IR names of the nodes, for comments
    # Params that share storage with another (an output written in place
    # over an input): they must not be declared non-aliasing.
    aliased: frozenset[str] = frozenset()
    # A kernel of several loop nests: one plan per nest, run in order (each
    # with the params it uses); the kernel's own steps are then empty.
    nests: tuple = ()
    # The kernel's `triton_config` attribute: [XBLOCK, RBLOCK (0: none),
    # num_warps, num_stages], pinned by the tuner or by hand; None: heuristic.
    launch: tuple[int, ...] | None = None
    # The kernel's `split` attribute: chunks per row of a reduction over few
    # long rows, run as two kernels (triton_split.py); None: not split.
    split: int | None = None
    # The ops whose values the kernel checks, by site (the `site` attribute
    # of a checked Compute, which the kernel records with an error): (ATen
    # op, LoopNode.site), so that the error names the op whose value was
    # bad, not every op fused into the kernel.
    sites: tuple[tuple[str, str], ...] = ()
    # (Loc or None, ATen op or None) of each node, in node order: the
    # source lines of the comment above the kernel (kernel_comments.py).
    sources: tuple = ()
    # A concatenation run in pieces (plan_pieces.py): pointwise plans over
    # sub-boxes of the ranges, run in order in place of the kernel's steps.
    pieces: tuple = ()

    @property
    def statements(self) -> tuple:
        """Every statement, loops flattened, in order."""
        if self.nests:
            return tuple(s for nest in self.nests for s in nest.statements)
        out = []
        for step in self.steps:
            out += step.statements if isinstance(step, Loop) else [step]
        return tuple(out)

    @property
    def loops(self) -> tuple:
        return tuple(step for step in self.steps if isinstance(step, Loop))

    @property
    def checks_values(self) -> bool:
        """Whether the kernel checks values eager PyTorch raises on: an
        indirect index out of range, an integer division by zero (the C++
        kernel takes an error slot)."""
        return any(isinstance(s, Compute) and checked_op(s.op, s.dtype) for s in self.statements)


_RESERVED = set(keyword.kwlist) | {
    "error",  # p_error: the C++ kernels' error slot
    "torch",
    "triton",
    "tl",
    "call",
    "args",
    "benchmark",
    "runtime",
    "math",
    "int",
    "float",
    "double",
    "bool",
    "char",
    "long",
    "short",
    "void",
    "auto",
    "const",
    "signed",
    "unsigned",
    "new",
    "delete",
    "this",
    "template",
    "typename",
    "namespace",
    "operator",
    "struct",
    "class",
    "union",
    "enum",
    "static",
    "extern",
    "register",
    "volatile",
    "switch",
    "case",
    "default",
    "goto",
    "sizeof",
    "typedef",
    "std",
}


def identifier(ir_name: str) -> str:
    """A Python and C identifier for an IR value name (`%x.y` -> `x_y`)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", ir_name.lstrip("%"))
    if not name or name[0].isdigit() or name in _RESERVED or name.startswith("_"):
        name = "v_" + name
    return name


def identifiers(names: dict[int, str]) -> dict[int, str]:
    """Unique identifiers for every named value (value id -> identifier)."""
    out, used = {}, set()
    for key, name in names.items():
        base = identifier(name)
        ident, k = base, 1
        while ident in used:
            ident, k = f"{base}_{k}", k + 1
        used.add(ident)
        out[key] = ident
    return out


def module_plans(module: Module) -> list[tuple[object, KernelPlan]]:
    """(kernel, plan) of every kernel of a fusion- or memplan-stage module but
    extern calls (a fusion-stage module has no memory plan: nothing in place)."""
    names = value_names(module)
    ids = identifiers(names)
    user_map = users(module)
    externs = extern_kernels(module)
    shared = in_place_pairs(module)
    functions = _function_names(module, ids)
    return [
        (k, plan_kernel(module, k, names, ids, user_map, shared.get(k.name.name, frozenset()), functions))
        for k in module.kernels
        if k.name.name not in externs
    ]


def _function_names(module: Module, ids: dict[int, str]) -> dict[str, str]:
    """A C and Python function name for each kernel. A kernel name is any IR
    symbol (`@main`, `@exp`, `@k.0`, `@call`), and C functions share one
    namespace with libm and the prelude: the names the fusion pass gives,
    `@k0`, stay as they are, any other gets a `k_` prefix (and a number when
    a value or another kernel has it already). The prefix also keeps them
    apart from a kernel's derived names (its nests `k0_1`, a split `k0_split`):
    no name is another's derived name, nor has a value's identifier as one
    of its own (`@main_1` beside a kernel `@main` of several nests)."""
    used, kernels, out = set(), set(), {}
    bases: set[str] = set()  # the names that some name in `used` derives from

    def take(name: str) -> None:
        used.add(name)
        derived = _DERIVED.fullmatch(name)
        if derived:
            bases.add(derived.group(1))

    def clashes(name: str) -> bool:
        derived = _DERIVED.fullmatch(name)
        return name in used or name in bases or (derived is not None and derived.group(1) in kernels)

    for ident in ids.values():
        take(ident)
    for kernel in module.kernels:
        symbol = kernel.name.name
        name = symbol if _FUSION_NAME.fullmatch(symbol) and not clashes(symbol) else "k_" + identifier(symbol)
        base, k = name, 1
        while clashes(name):
            name, k = f"{base}_v{k}", k + 1
        take(name)
        kernels.add(name)
        out[symbol] = name
    return out


_FUSION_NAME = re.compile(r"k[0-9]+")
# The names codegen derives from a kernel's function name: a nest's, a split's.
_DERIVED = re.compile(r"(.+)_([0-9]+|split)")


def launched_kernels(module: Module, names) -> dict[str, str]:
    """The names among `names` (a generated module's globals) that are a
    kernel's function or one derived from it (a split's `k0_split`), each
    with the symbol of its kernel (`k0`): what the profiler times as that
    kernel's launches (tirc/profiling.py)."""
    functions = _function_names(module, identifiers(value_names(module)))
    symbols = {function: symbol for symbol, function in functions.items()}
    out = {}
    for name in names:
        derived = _DERIVED.fullmatch(name)
        base = name if name in symbols else derived.group(1) if derived else None
        if base in symbols:
            out[name] = symbols[base]
    return out


def plan_kernel(
    module: Module,
    kernel,
    names: dict[int, str],
    ids: dict[int, str],
    user_map,
    in_place: frozenset,
    functions: dict[str, str],
) -> KernelPlan:
    """The statements of a kernel; `in_place` holds the ids of buffers that
    share storage (an input and the output written over it); `functions`
    names the kernels' functions."""
    aliased = frozenset(ids[key] for key in in_place)
    name = functions[kernel.name.name]
    nests = kernel.loop_nests()
    if len(nests) == 1:
        plan = _plan_nest(module, kernel, name, None, user_map, names, ids, aliased)
        attrs = dict(kernel.attrs)
        pinned = attrs.get("triton_config")
        return replace(plan, launch=None if pinned is None else tuple(pinned), split=attrs.get("split"))
    plans = tuple(
        _plan_nest(module, kernel, f"{name}_{j}", nest, user_map, names, ids, aliased)
        for j, nest in enumerate(nests)
    )
    io = kernel_io(module, kernel, user_map)
    nodes = tuple(names[id(v)] for v in kernel.nodes)
    params = _params(io, ids)
    sources = tuple(source for plan in plans for source in plan.sources)
    return KernelPlan(
        name, (), (), params, len(io.inputs), (), nodes, aliased, plans, sites=plans[0].sites, sources=sources
    )


def _params(io, ids) -> tuple[tuple[str, str], ...]:
    return tuple((ids[id(v)], v.type.dtype) for v in io.inputs + io.outputs)


def _plan_nest(module, kernel, name: str, nest, user_map, names, ids, aliased) -> KernelPlan:
    """One loop nest (`nest`; None: the kernel's only one) as a plan of its own."""
    io = kernel_io(module, kernel, user_map, nest)
    values = kernel.nodes if nest is None else nest
    by_id = {id(n.result): n for n in module.nodes}
    nodes = [by_id[id(v)] for v in values]
    kernel_nodes = [by_id[id(v)] for v in kernel.nodes]
    sites = _check_sites(kernel_nodes)
    space = kernel_space(nodes, names)
    statements = _statements(nodes, space, {id(v) for v in io.outputs}, ids, sites)
    reduction = space.reduction
    if reduction and 0 in reduction:
        statements, reduction = _empty_reduction(statements), ()
    return KernelPlan(
        name,
        space.ranges,
        reduction,
        _params(io, ids),
        len(io.inputs),
        _schedule(statements, space),
        tuple(names[id(v)] for v in values),
        aliased,
        sites=tuple((n.origin, n.site) for n in kernel_nodes if id(n) in sites),
        sources=tuple((n.loc, dict(n.attrs).get("origin")) for n in nodes),
    )


def _statements(nodes, space, outputs: set[int], ids, sites: dict[int, int]) -> list:
    """The kernel's statements over its own loop variables, node by node;
    loads of a buffer computed in the kernel take the producer's value.
    A checked op's Compute carries its node's site (`sites`, _check_sites')."""
    stored: dict[int, str] = {}
    statements = []
    counter = 0
    indirect = 0
    variables = space.variables
    empty = 0 in space.reduction
    for node in nodes:
        place = space.places[id(node)]
        if empty and place.level == "elem":
            continue  # it has no elements (see _empty_reduction)
        local: dict[int, str] = {}
        # Indirect index symbols are per body in the IR (ind0, ...); in the
        # kernel they are renumbered so fused bodies cannot collide.
        renamed: dict = {}

        for op in node.body:
            if op.op == "indirect":
                name = f"ind{indirect}"
                indirect += 1
                renamed[index_var(op.result.hint)] = index_var(name)
                local[id(op.result)] = name
                attrs = op.attrs + (("site", sites[id(node)]),)
                statements.append(Compute(name, "indirect", (local[id(op.operands[0])],), "i64", attrs))
                continue
            if op.op == "store":
                var = local[id(op.operands[0])]
                stored[id(node.result)] = var
                if id(node.result) in outputs:
                    statements.append(
                        Store(ids[id(node.result)], space.write_index(node), var, node.result.type.dtype)
                    )
                continue
            if op.op == "load" and id(op.operands[0]) in stored:
                local[id(op.result)] = stored[id(op.operands[0])]
                continue
            var = f"t{counter}"
            counter += 1
            local[id(op.result)] = var
            if op.op == "load":
                source = op.operands[0]
                index = place.apply(sympy.sympify(op.attr("index")).xreplace(renamed), variables)
                statements.append(Load(var, ids[id(source)], index, op.result.type))
            elif op.op == "index":
                index = place.apply(sympy.sympify(op.attr("index")).xreplace(renamed), variables)
                statements.append(Compute(var, "index", (), "i64", (("index", index),)))
            elif op.op == "reduce":
                arg = op.operands[0]
                kind = op.attr("reduction").name
                if arg.type == "b8":
                    kind = _B8_REDUCTIONS.get(kind, kind)
                statements.append(Reduce(var, kind, local[id(arg)], op.result.type, arg.type))
            elif op.op == "scan":
                arg = op.operands[0]
                kind = op.attr("reduction").name
                statements.append(Scan(var, kind, local[id(arg)], op.result.type, op.attr("dim")))
            else:
                args = tuple(local[id(a)] for a in op.operands)
                attrs = op.attrs + ((("site", sites[id(node)]),) if _checked(op) else ())
                statements.append(Compute(var, op.op, args, op.result.type, attrs))
    return statements


def _empty_reduction(statements: list) -> list:
    """The per-row statements of a kernel whose reductions run over no
    elements: each reduction is its start value (0 for argmax/argmin, as
    in the interpreter), and what only fed a reduction is dropped (the
    per-element nodes were left out by `_statements`). Nothing may be read
    per element: an input of no elements may have no storage, and with the
    r-variables' range of 0 an index no longer shows which loads were per
    element (they would be hoisted to the rows)."""
    needed: set[str] = set()
    kept = []
    for stmt in reversed(statements):
        if isinstance(stmt, Reduce):
            stmt = Compute(
                stmt.var, "constant", (), stmt.dtype, (("value", empty_reduction(stmt.kind, stmt.dtype)),)
            )
        if not isinstance(stmt, Store) and stmt.var not in needed:
            continue
        needed.update(uses(stmt))
        kept.append(stmt)
    return kept[::-1]


def index_symbols(stmt) -> list[str]:
    """The symbols of a statement's index (a load, store or index value), sorted."""
    if isinstance(stmt, (Load, Store)):
        index = stmt.index
    elif isinstance(stmt, Compute) and stmt.op == "index":
        index = dict(stmt.attrs)["index"]
    else:
        return []
    return sorted(s.name for s in sympy.sympify(index).free_symbols)


def uses(stmt) -> list[str]:
    """The statement vars a statement reads (indirect indices included)."""
    indirect = [name for name in index_symbols(stmt) if name.startswith("ind")]
    if isinstance(stmt, Store):
        return indirect + [stmt.var]
    if isinstance(stmt, (Reduce, Scan)):
        return [stmt.arg]
    if isinstance(stmt, Load) or stmt.op == "index":
        return indirect
    return list(stmt.args)


def _reads_r(stmt) -> bool:
    return any(name.startswith("r") for name in index_symbols(stmt))


def _schedule(statements: list, space) -> tuple:
    """Steps per row: statements that do not vary along the r-variables run
    once per row (hoisted), as soon as the reductions they need are done;
    the others run in Loop p, the first pass after the reductions they need.
    A per-element value needed in several passes is recomputed in each
    (no buffer), as Inductor's looped reductions reload their inputs."""
    if not any(isinstance(s, Reduce) for s in statements):
        return tuple(statements)
    elem: set[str] = set()  # vars that vary along the r-variables
    ready: dict[str, int] = {}  # var -> the pass after which it exists (0: before any)
    defining: dict[str, object] = {}
    passes = 0
    pass_of: dict[int, int] = {}
    for stmt in statements:
        used = uses(stmt)
        after = max((ready[u] for u in used), default=0)
        if isinstance(stmt, Reduce):
            pass_of[id(stmt)] = after + 1
            ready[stmt.var] = after + 1
            passes = max(passes, after + 1)
            continue
        varies = _reads_r(stmt) or any(u in elem for u in used)
        if isinstance(stmt, Store):
            if varies:
                pass_of[id(stmt)] = after + 1
                passes = max(passes, after + 1)
            else:
                pass_of[id(stmt)] = -after  # a per-row store, after pass `after`
            continue
        defining[stmt.var] = stmt
        ready[stmt.var] = after
        if varies:
            elem.add(stmt.var)
    steps: list = [s for s in statements if _row_step(s, elem, ready, pass_of) == 0]
    for p in range(1, passes + 1):
        roots = [s for s in statements if pass_of.get(id(s)) == p]
        needed: set[int] = set()
        stack = [u for s in roots for u in uses(s)]
        while stack:
            var = stack.pop()
            stmt = defining.get(var)
            if var in elem and stmt is not None and id(stmt) not in needed:
                needed.add(id(stmt))
                stack.extend(uses(stmt))
        steps.append(Loop(tuple(s for s in statements if id(s) in needed or pass_of.get(id(s)) == p)))
        steps += [s for s in statements if _row_step(s, elem, ready, pass_of) == p]
    return tuple(steps)


def _row_step(stmt, elem: set[str], ready: dict[str, int], pass_of: dict[int, int]) -> int | None:
    """After which pass a per-row statement runs (None: it runs in a Loop)."""
    if isinstance(stmt, Reduce):
        return None
    if isinstance(stmt, Store):
        p = pass_of[id(stmt)]
        return -p if p <= 0 else None
    if stmt.var in elem:
        return None
    return ready[stmt.var]


def in_place_pairs(module: Module) -> dict[str, frozenset]:
    """Per launched kernel, the buffers it reads and writes in the same storage
    (a reuse line just before the launch that reads the old buffer)."""
    out: dict[str, set] = {}
    for k, line in enumerate(module.wrapper or ()):
        if line.op == "reuse" and reads_next(module.wrapper, k, line.operands[0]):
            call = next(x for x in module.wrapper[k + 1 :] if x.op in ("launch", "extern"))
            out.setdefault(call.kernel.name, set()).update((id(line.operands[0]), id(line.results[0])))
    return {name: frozenset(ids) for name, ids in out.items()}


def reads_next(wrapper, k: int, old) -> bool:
    """Whether the launch after wrapper line `k` reads `old` (it writes in place)."""
    call = next((x for x in wrapper[k + 1 :] if x.op in ("launch", "extern")), None)
    return call is not None and any(v is old for v in call.operands)
