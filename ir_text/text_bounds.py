"""Bounded values from IR text: the limits on what one literal or index
expression of a (possibly hostile) file may hold, and the parser's helpers
that check them while it builds (ir_text/parser.py): index expressions
built once per sum or product with their depth and size counted, int64
literals checked before conversion, list and rank limits. docs/security.md
says why: nothing that parses a dump may recurse on, or spend time
quadratic in, what the file chooses."""

from __future__ import annotations

from lark import Token

from .errors import TircError

# Limits on one literal or index expression of a (possibly hostile) file,
# far above what tirc prints: the index expressions of the tests' dumps and
# of a GPT block nest 8 levels deep at most and hold 27 nodes at most.
# sympy and the passes walk index expressions recursively, a few Python
# frames a level: 64 levels stay well inside Python's 1000 frames.
MAX_INDEX_DEPTH = 64
# sympy's Add and Mul sort and combine their arguments: a bound on one
# expression's terms and operators bounds the time spent building it.
MAX_INDEX_NODES = 2048
# The printer and the graph checks recurse into nested lists.
MAX_LIST_DEPTH = 32
# Far above any argument list; bounds what one literal hands torch.
MAX_LIST_LENGTH = 65536
# Dimensions of a shape or loop nest (torch's practical limit is lower): with
# int64 sizes, their product stays far below the 4300 digits Python prints.
MAX_RANK = 64


def _pos(meta_or_token):
    line = getattr(meta_or_token, "line", None)
    col = getattr(meta_or_token, "column", None)
    return (line, col) if line is not None else None


def _fail(where, message: str) -> TircError:
    pos = _pos(where)
    return TircError(message, line=pos[0] if pos else None, col=pos[1] if pos else None)


class _Index:
    """An index expression being built, with the nesting depth and node count
    the limits bound. A sum or product keeps its terms or factors until it is
    used (`combine` is sympy.Add or sympy.Mul; None: `parts` holds the one
    finished expression): `2*(i0 + 1)*(i1 + 1)` must parse back to the Mul
    it was printed from (multiplying pairwise would distribute 2 over the
    first sum), and adding a long sum pairwise costs time quadratic in its terms."""

    __slots__ = ("combine", "parts", "depth", "nodes")

    def __init__(self, combine, parts: list, depth: int, nodes: int):
        self.combine, self.parts, self.depth, self.nodes = combine, parts, depth, nodes

    def value(self):
        return self.parts[0] if self.combine is None else self.combine(*self.parts)


def _sym(x):
    """The sympy expression of an index operand (a leaf is one already)."""
    return x.value() if type(x) is _Index else x


def _size(x) -> tuple[int, int]:
    """(depth, nodes) of an index operand."""
    return (x.depth, x.nodes) if type(x) is _Index else (1, 1)


def _parts(x, combine) -> list:
    """What `x` adds to a sum or product built by `combine`: its own parts
    when it is one, so `a*b*c` is one Mul."""
    return x.parts if type(x) is _Index and x.combine is combine else [_sym(x)]


def _check_index(meta, depth: int, nodes: int) -> None:
    if depth > MAX_INDEX_DEPTH:
        raise _fail(meta, f"index expression nests deeper than {MAX_INDEX_DEPTH} levels (tirc's limit)")
    if nodes > MAX_INDEX_NODES:
        raise _fail(
            meta, f"index expression has more than {MAX_INDEX_NODES} terms and operators (tirc's limit)"
        )


def _chain(meta, combine, left, right, tail: list) -> _Index:
    """`left` joined to `right` (whose parts are `tail`) by `combine`. A sum
    or product on the left is extended in place (lark hands each result to
    its parent only): `a + b + c` nests no deeper than `a + b`."""
    (ldepth, lnodes), (rdepth, rnodes) = _size(left), _size(right)
    if type(left) is _Index and left.combine is combine:
        depth, nodes = max(ldepth, rdepth + 1), lnodes + rnodes + 1
        _check_index(meta, depth, nodes)
        left.parts += tail
        left.depth, left.nodes = depth, nodes
        return left
    depth, nodes = max(ldepth, rdepth) + 1, lnodes + rnodes + 1
    _check_index(meta, depth, nodes)
    return _Index(combine, [_sym(left), *tail], depth, nodes)


def _call(meta, function, a, b) -> _Index:
    """`function(a, b)`, checked against the limits before sympy builds it."""
    (adepth, anodes), (bdepth, bnodes) = _size(a), _size(b)
    depth, nodes = max(adepth, bdepth) + 1, anodes + bnodes + 1
    _check_index(meta, depth, nodes)
    return _Index(None, [function(_sym(a), _sym(b))], depth, nodes)


def _int64(token: Token, what: str) -> int:
    # int() refuses more than 4300 digits (Python's limit on str -> int) and
    # an int64 has at most 19: longer tokens, leading zeros aside, are out of range.
    if len(token) < 19 or len(token.lstrip("-").lstrip("0")) <= 19:
        value = int(token)
        if -(2**63) <= value < 2**63:
            return value
    raise _fail(token, f"{_abbreviated(token)} is outside the range of int64 ({what})")


def _abbreviated(token: str) -> str:
    """A number for a message: a long one by its first digits and length."""
    return token if len(token) <= 40 else f"{token[:20]}... ({len(token)} characters)"


def _check_length(meta, items) -> None:
    if len(items) > MAX_LIST_LENGTH:
        raise _fail(meta, f"a list of {len(items)} elements, more than {MAX_LIST_LENGTH} (tirc's limit)")


def _check_rank(where, dims) -> None:
    if len(dims) > MAX_RANK:
        raise _fail(where, f"{len(dims)} dimensions, more than {MAX_RANK} (tirc's limit)")


def _list_depth(items: tuple) -> int:
    """How deeply `items` nests lists (1: a flat list), counted up to one
    past MAX_LIST_DEPTH; iterative, as the nesting comes from the file."""
    depth, level = 1, [x for x in items if type(x) is tuple]
    while level and depth <= MAX_LIST_DEPTH:
        depth += 1
        level = [x for inner in level for x in inner if type(x) is tuple]
    return depth
