"""Reductions over few long rows, which a backend may split into two kernels
(codegen/triton_split.py: per-chunk partials, then their combine), as
Inductor's split reductions. Only a kernel of one pass over its rows can be
split: a node that reads a reduction's whole-row result per element needs a
second pass, which cannot start before every chunk's partial is combined.
So the fusion pass keeps such a node out of a few-long-row reduction's
kernel (`[split]`), and the plan check accepts a kernel's `split = N`
attribute only where the kernel can be split."""

from __future__ import annotations

from dataclasses import dataclass

from ir_text import format_literal

from .iteration import affine_strides, kernel_group, kernel_space


@dataclass(frozen=True)
class SplitRule:
    """What a backend that splits reductions tells the scheduler
    (its `Target.split`): it splits a one-pass kernel whose every reduction
    is one of `kinds` (partials the reduction itself combines), into at most
    `max_count` chunks per row, when its programs would be too few:
    fewer than `max_rows` rows of at least `min_rnumel` elements (a
    program a row), or an outer reduction (its reads contiguous along the
    rows) whose column tiles of up to `outer_tile` rows are fewer than
    `max_programs`, each reducing at least `min_rnumel` elements."""

    max_rows: int
    min_rnumel: int
    kinds: frozenset[str]
    max_count: int
    outer_tile: int
    max_programs: int

    def applies(self, group: tuple[int, int], outer: bool = False) -> bool:
        numel, rnumel = group
        if numel <= 0:
            return False
        if numel < self.max_rows and rnumel >= self.min_rnumel:
            return True
        width = min(self.outer_tile, 1 << (numel - 1).bit_length())
        return outer and numel < self.max_programs * width and rnumel * width >= self.min_rnumel


def split_reason(nodes: list, names, rule: SplitRule | None) -> str | None:
    """Why a kernel of `nodes` (program order, one iteration space) would
    keep a reduction the backend splits from being split, or None."""
    if rule is None or _unsplittable(nodes, rule):
        return None
    group = kernel_group(nodes)
    if not rule.applies(group) and not (
        rule.applies(group, outer=True) and outer_reads(nodes, kernel_space(nodes, names))
    ):
        return None
    second = second_pass(nodes, names)
    if second is None:
        return None
    numel, rnumel = kernel_group(nodes)
    reader, reduction = second
    return (
        f"[split] {reader} reads {reduction}'s whole-row result per element, a second pass over"
        f" {numel} row(s) of {rnumel} elements: the reduction's kernel stays one pass, so that it is split"
    )


def second_pass(nodes: list, names) -> tuple[str, str] | None:
    """(reader, reduction) of the first node that reads a reduction's
    result (or a per-row value computed from one) per element, or None when
    the kernel makes one pass over its rows."""
    space = kernel_space(nodes, names)
    whole_row: dict[int, str] = {}  # id(value) -> the reduction its row value needs
    for node in nodes:
        per_element = space.places[id(node)].level != "row"
        needs = None
        for op in node.body:
            if op.op == "reduce":
                per_element = False  # the epilogue runs once per row
            if op.op != "load" or id(op.operands[0]) not in whole_row:
                continue
            needs = whole_row[id(op.operands[0])]
            if per_element:
                return names[id(node.result)], needs
        if node.kind == "reduction":
            whole_row[id(node.result)] = names[id(node.result)]
        elif needs is not None:
            whole_row[id(node.result)] = needs
    return None


def outer_reads(nodes: list, space) -> bool:
    """Whether the kernel's loads are contiguous along its rows more often
    than along the reduction (a column sum, a pool over an NHWC map's
    pixels), as the Triton backend counts them to launch column tiles
    (codegen/triton.py's _outer)."""
    if not space.ranges or not space.reduction:
        return False
    inner_i, inner_r = f"i{len(space.ranges) - 1}", f"r{len(space.reduction) - 1}"
    variables = space.variables
    along_rows = along_reduction = 0
    for node in nodes:
        place = space.places[id(node)]
        for op in node.body:
            if op.op != "load":
                continue
            strides = affine_strides(place.apply(op.attr("index"), variables))
            if strides is None or inner_r not in strides:
                continue
            along_reduction += strides[inner_r] == 1
            along_rows += strides.get(inner_i) == 1
    return along_rows > along_reduction


def _unsplittable(nodes: list, rule: SplitRule) -> str | None:
    """Why no plan of these nodes splits, whatever the passes: no reduction,
    a scan, or a reduction whose partials do not combine (argmax), or None."""
    if not any(n.kind == "reduction" for n in nodes):
        return "it holds no reduction"
    for node in nodes:
        if node.kind == "scan":
            return "it holds a scan"
        for op in node.body:
            if op.op == "reduce" and op.attr("reduction").name not in rule.kinds:
                kind = op.attr("reduction").name
                return f"{kind} partials do not combine by the reduction itself"
    return None


def attribute_reason(value, nodes: list, names, rule: SplitRule | None, backend: str, pinned) -> str | None:
    """Why a kernel's `split = N` attribute cannot be honoured, or None: the
    backend splits no reduction, N is not a positive integer in range, or
    the kernel cannot be split (no reduction, a scan, argmax, several
    passes, a pinned launch config)."""
    if rule is None:
        return f"the {backend} backend does not split reductions into two kernels"
    if type(value) is not int or value < 1:
        return f"expected a positive integer (chunks per row), got {format_literal(value)}"
    if value > rule.max_count:
        return f"{value} chunks per row is more than {rule.max_count}, the most one launch takes"
    why = _unsplittable(nodes, rule)
    if why:
        return f"the kernel cannot be split: {why}"
    second = second_pass(nodes, names)
    if second is not None:
        reader, reduction = second
        return f"the kernel cannot be split: {reader} reads {reduction}'s whole-row result per element (a second pass)"
    if pinned is not None:
        return "the kernel cannot be split: its triton_config is pinned (remove one of the two)"
    return None
