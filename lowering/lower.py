"""The lower pass: capture-stage ATen graph -> loop and extern nodes.

Each op is looked up in the rule tables in turn: views (no node: a layout,
see tensors.py), pointwise ops (one loop.pointwise node), rules that build
their own nodes (reductions, scans, indexing, pooling), and the ops that are
extern calls by design (matmul, convolution). Everything else, and any op a
rule cannot handle (it raises NotLowerable), becomes an extern node that
calls the ATen op: the fallback, so any model compiles. The scheduler fuses
the loop nodes afterwards.
"""

from __future__ import annotations

import sympy
import torch

from ir_text import (
    BufferType,
    Enum,
    ExternNode,
    GraphOp,
    LoopNode,
    Module,
    TircError,
    Value,
    contiguous_strides,
    from_torch,
    loop_vars,
    module_device,
    non_overlapping,
    shape_call,
    simplify_index,
    strided_index,
    to_torch,
)

from .bias import unfuse_bias
from .body import BodyBuilder, Operands, compute_dtype
from .layout import (
    CONVOLUTION,
    KEEP,
    LayoutPlan,
    channels_last_strides,
    convolved_inputs,
    decide_layout,
    in_channels_last_order,
    is_channels_last,
)
from .pointwise import POINTWISE
from .rules import NODE_RULES
from .tensors import CLONE, COPIES, VIEWS, LTensor, NotLowerable, of_buffer, view_strides

# Views whose arguments are storage offsets: they read a buffer in eager's layout.
STORAGE_VIEWS = frozenset({"aten.as_strided.default", "aten.as_strided_copy.default"})

# Ops that are extern ATen calls by design (as Inductor's extern kernels), not fallbacks.
EXTERN_OPS = frozenset(
    {
        "aten.mm.default",
        "aten.bmm.default",
        "aten.addmm.default",
        "aten.baddbmm.default",
        "aten.convolution.default",
        # oneDNN's linear, where it times faster than addmm (codegen/cpp_extern_select.py).
        "mkldnn._linear_pointwise.default",
        # A view handed to an extern call without a copy (Lowering.strided_view).
        "aten.as_strided.default",
        # Attention on the CPU: ATen's flash kernel (lowering/capture_decompositions.py).
        "aten._scaled_dot_product_flash_attention_for_cpu.default",
    }
)


def fallback_ops(module: Module) -> tuple[str, ...]:
    """The ATen ops of a lowered module that run as extern calls for want of a lowering."""
    return tuple(sorted({n.target for n in module.nodes if n.kind == "extern"} - EXTERN_OPS))


def extern_ops(module: Module) -> tuple[str, ...]:
    """Every ATen op a lowered module calls (fallbacks and matmul/convolution)."""
    return tuple(sorted({n.target for n in module.nodes if n.kind == "extern"}))


# The ops whose f16/bf16 kernels read a scalar argument at its own
# precision, not rounded to the tensor's dtype (ATen's original_scalar_value
# and opmath scalars; see body.Operands), by device: on the CPU mul and div
# only; on CUDA add and sub as well (measured on an H200, torch 2.11).
_EXACT_ON_BOTH = {
    "aten.mul.Tensor",
    "aten.mul.Scalar",
    "aten.div.Tensor",
    "aten.div.Scalar",
    "aten.div.Tensor_mode",
    "aten.div.Scalar_mode",
}
EXACT_SCALARS = {
    "cpu": frozenset(_EXACT_ON_BOTH),
    "cuda": frozenset(
        _EXACT_ON_BOTH
        | {"aten.add.Tensor", "aten.add.Scalar", "aten.sub.Tensor", "aten.sub.Scalar"}
        | {"aten.rsub.Tensor", "aten.rsub.Scalar"}
    ),
}


def _promoted(op: GraphOp, positions) -> str:
    """The dtype ATen's type promotion gives the arguments at `positions`."""
    operands = []
    for k in positions:
        if k >= len(op.args):
            continue
        a = op.args[k]
        if isinstance(a, Value):
            t = a.type
            operands.append(torch.empty((1,) * len(t.shape), dtype=to_torch(t.dtype), device="meta"))
        elif isinstance(a, (bool, int, float)):
            operands.append(a)
    if not operands:
        return op.results[0].type.dtype
    if len(operands) == 1:
        x = operands[0]
        return from_torch(x.dtype) if isinstance(x, torch.Tensor) else op.results[0].type.dtype
    dtype = torch.result_type(operands[0], operands[1])
    for extra in operands[2:]:
        dtype = torch.result_type(torch.empty((1,), dtype=dtype, device="meta"), extra)
    return from_torch(dtype)


def _error(op: GraphOp, message: str) -> TircError:
    """An error located at the op's line in the user's source (when known)."""
    if op.loc is not None:
        return TircError(message, op.loc.file, op.loc.line)
    return TircError(message)


class Lowering:
    """The state of one lowering: the nodes emitted so far and what each graph
    value became. Rules emit nodes through it."""

    def __init__(self, module: Module, layout: LayoutPlan = KEEP):
        self.module = module
        # Where eager's semantics differ by device (body.Operands, pointwise._bound).
        self.device = "cuda" if module_device(module).startswith("cuda") else "cpu"
        self.layout = layout
        self.returned = {id(v) for v in module.outputs}
        self.channels_last_copies: dict[int, Value] = {}  # buffer id -> its channels-last copy
        self.nodes: list = []
        self.env: dict[int, object] = {id(i.value): of_buffer(i.value) for i in module.inputs}
        self.inputs = frozenset(id(i.value) for i in module.inputs)
        self.convolved_inputs = convolved_inputs(module) if layout.channels_last else frozenset()
        self.op: GraphOp | None = None  # the op being lowered, for origins and locations

    # ---- emitting nodes
    def loop(self, kind: str, shape, dtype: str, body: BodyBuilder, reduction=(), strides=None) -> LTensor:
        """A loop node over `shape` computing `body` (which must end in a store),
        laid out as `strides`, else as the layout decision says."""
        shape = tuple(int(s) for s in shape)
        buffer = Value("", BufferType(dtype, shape, strides or self._strides(shape)))
        origin = (("origin", self.op.target),) if self.op is not None else ()
        loc = self.op.loc if self.op is not None else None
        self.nodes.append(LoopNode(buffer, kind, shape, tuple(reduction), origin, body.ops, loc))
        return of_buffer(buffer)

    def pointwise(
        self, shape, dtype: str, fn, compute: str | None = None, operands=None, strides=None
    ) -> LTensor:
        """A pointwise node whose body is `fn(builder)`, stored as `dtype`."""
        b = BodyBuilder(shape, compute or compute_dtype(dtype), operands=operands, device=self.device)
        b.store(b.cast(fn(b), dtype))
        return self.loop("pointwise", shape, dtype, b, strides=strides)

    def _strides(self, shape) -> tuple[int, ...]:
        """A new buffer's layout: channels-last when the op computes it from
        a channels-last tensor of its rank, except for what the program
        returns, which the user gets contiguous. With the layout decision on,
        any such operand makes it so; without, the first operand that spans
        the result's dimensions and whose strides order them decides, as
        eager's TensorIterator orders a result by its first input's strides
        (and its cat keeps its inputs' memory format): a pointwise op on a
        convolution's channels-last output (oneDNN's, for an NHWC view) is then
        laid out as eager lays it out, not transposed to NCHW."""
        if not self._may_follow(shape):
            return contiguous_strides(shape)
        operands = list(_tensors(self.value(self.op.args)))
        if self.layout.channels_last:
            follows = any(self._channels_last_tensor(t, len(shape)) for t in operands)
        else:
            follows = _first_order_channels_last(operands, tuple(shape))
        return channels_last_strides(shape) if follows else contiguous_strides(shape)

    def reduced_strides(self, shape, kept: tuple[int, ...]) -> tuple[int, ...] | None:
        """A reduction's layout where its input decides it: with the layout
        decision on, channels-last when `kept`, the strides of the input's
        dimensions that the result keeps (one per result dimension), order
        them as channels-last does, so that the kernel stores along the
        dimension it loads along (the sum across SKNet's branches, stacked
        from NHWC maps, was written NCHW at a stride of H x W); else None (as
        for any loop node). Eager lays such a sum out contiguous."""
        shape = tuple(int(s) for s in shape)
        if not (self.layout.channels_last and self._may_follow(shape)):
            return None
        return channels_last_strides(shape) if in_channels_last_order(shape, kept) else None

    def _may_follow(self, shape) -> bool:
        """Whether the op being lowered may lay its result out other than
        contiguous: a 4-D or 5-D result that the program does not return."""
        if len(shape) not in (4, 5) or self.op is None:
            return False
        return not any(id(r) in self.returned for r in self.op.results)

    def _channels_last_tensor(self, t: LTensor, rank: int) -> bool:
        """A channels-last buffer of that rank, seen whole or through a
        strided view that keeps the channels-last order (a channel slice,
        as `chunk` makes: eager's result follows it too), or a whole input
        that a convolution reads (`convolved_inputs`). A reshape of one,
        such as group norm's [N, G, C/G, HW], leads nowhere: its groups are
        not the innermost dimension."""
        b = t.buffer.type
        if (
            id(t.buffer) in self.convolved_inputs
            and tuple(t.shape) == tuple(b.shape)
            and len(b.shape) == rank
        ):
            return True
        if len(b.shape) != rank or len(t.shape) != rank or not is_channels_last(b.shape, b.strides):
            return False
        if tuple(t.shape) == tuple(b.shape):
            return True
        strides = view_strides(t)
        return strides is not None and in_channels_last_order(t.shape, strides)

    def channels_last(self, t: LTensor) -> Value:
        """A convolution's input as a channels-last buffer: itself, or a copy."""
        if t.is_buffer and is_channels_last(t.buffer.type.shape, t.buffer.type.strides):
            return t.buffer
        if t.is_buffer and id(t.buffer) in self.channels_last_copies:
            return self.channels_last_copies[id(t.buffer)]  # an input that several convolutions read
        strides = channels_last_strides(t.shape)
        copy = self.copy(t, strides).buffer
        if t.is_buffer:
            self.channels_last_copies[id(t.buffer)] = copy
        return copy

    def materialize(self, t: LTensor) -> LTensor:
        """The tensor as a buffer of its own (a copy when it is a view)."""
        if t.is_buffer:
            return t
        return self.copy(t)

    def copy(self, t: LTensor, strides=None) -> LTensor:
        """A buffer of its own holding `t`'s elements, laid out as `strides`
        (default: as the layout decision lays out the op being lowered)."""
        return self.pointwise(t.shape, t.dtype, lambda b: b.load(t), compute=t.dtype, strides=strides)

    def is_input(self, buffer: Value) -> bool:
        return id(buffer) in self.inputs

    def chose_channels_last(self, buffer: Value) -> bool:
        """Whether the buffer is channels-last by the layout decision (not in
        the layout eager would give it): a channels-last buffer the program
        made while the decision is on; an input's layout is the user's."""
        b = buffer.type
        return (
            self.layout.channels_last and is_channels_last(b.shape, b.strides) and not self.is_input(buffer)
        )

    def strided_view(self, t: LTensor) -> Value | None:
        """A view that ATen can take without a copy, as an extern
        `aten.as_strided` of its buffer (Inductor passes a ReinterpretView):
        element idx at offset + sum(stride * idx) from the buffer's first
        element, no two elements at one offset. The offset must be 0 for a
        program input (as_strided's offset counts from the storage's start,
        which only buffers this program allocates share with their first
        element). None for other views (broadcasts, gathers), which are copied."""
        layout = self._view_layout(t)
        if layout is None:
            return None
        strides, offset = layout
        shape = tuple(t.shape)
        args = (t.buffer, shape, tuple(strides)) + ((int(offset),) if offset else ())
        result = Value("", BufferType(t.dtype, shape, tuple(strides)))
        loc = self.op.loc if self.op is not None else None
        self.nodes.append(ExternNode((result,), "aten.as_strided.default", args, (), loc))
        return result

    def _view_layout(self, t: LTensor) -> tuple[list[int], int] | None:
        """(strides, offset) of a view `strided_view` can pass, else None."""
        if t.is_buffer or 0 in t.shape:
            return None  # an empty view is copied: nothing to copy, and no offset to check
        variables = loop_vars(len(t.shape))
        index = simplify_index(t.index(variables), {v.name: size for v, size in zip(variables, t.shape)})
        strides = []
        for v in variables:
            coeff = sympy.sympify(index.coeff(v))
            if not (coeff.is_Integer and coeff >= 0):
                return None
            strides.append(int(coeff))
        offset = sympy.expand(index - strided_index(variables, strides))
        if not offset.is_Integer or offset < 0 or not non_overlapping(t.shape, strides):
            return None
        if offset and self.is_input(t.buffer):
            return None
        return strides, int(offset)

    def _convolution_input(self, t: LTensor) -> LTensor:
        """A convolution's input as ATen reads it without a copy of its own:
        a buffer, or a view with contiguous strides; any other view (the
        transpose of a layer norm's result, as a Conformer's convolution
        module reads it) becomes a buffer of tirc's, contiguous. ATen would
        copy it inside the call (cuDNN: an elementwise strided copy, 30 us
        of a 16 MB transpose on an H200); a loop node of tirc's can take
        the producer's pointwise work with it. A channels-last view (the
        transpose of a linear layer's tokens, reshaped to a map, as
        SegFormer's Mix-FFN and spatial reduction read it) is passed as it
        is: the libraries run channels-last inputs in that layout, without a
        copy (oneDNN's depthwise 3x3 ran 2.3x slower on the contiguous copy)."""
        if t.is_buffer:
            return t
        layout = self._view_layout(t)
        if layout is not None and (_contiguous(t.shape, layout[0]) or is_channels_last(t.shape, layout[0])):
            return t
        return self.copy(t, contiguous_strides(t.shape))

    def extern(self, op: GraphOp, args, kwargs) -> list[LTensor]:
        """An extern node calling `op`'s ATen op; views among the arguments are
        passed as strided views where they can be, else materialised."""

        def arg(a):
            if isinstance(a, LTensor):
                return self.strided_view(a) or self.materialize(a).buffer
            if isinstance(a, tuple):
                return tuple(arg(x) for x in a)
            return a

        channels_last = self._runs_channels_last(op, args)
        if channels_last:
            args = (self.channels_last(args[0]),) + tuple(args[1:])
        elif op.target == CONVOLUTION and isinstance(args[0], LTensor) and 0 not in args[0].shape:
            args = (self._convolution_input(args[0]),) + tuple(args[1:])
        args = tuple(arg(a) for a in args)
        kwargs = tuple((k, arg(v)) for k, v in kwargs)
        strides = _extern_strides(op.target, args, kwargs, op.results, module_device(self.module))
        if channels_last:
            # The library's layout for a channels-last input (cuDNN's and
            # oneDNN's), written here rather than asked of a fake tensor,
            # whose answer depends on the libraries of the machine lowering.
            strides = [channels_last_strides(r.type.shape) for r in op.results]
        results = tuple(
            Value("", BufferType(r.type.dtype, r.type.shape, st)) for r, st in zip(op.results, strides)
        )
        self.nodes.append(ExternNode(results, op.target, args, kwargs, op.loc))
        return [of_buffer(v) for v in results]

    def _in_eager_layout(self, t: LTensor) -> LTensor:
        """A buffer whose channels-last layout the decision chose, copied
        into eager's contiguous one for a view that reads storage offsets
        (`as_strided`: group norm's decomposition takes one of a product)."""
        if not (t.is_buffer and self.chose_channels_last(t.buffer)):
            return t  # eager's layout (an input's is the user's): eager reads the same storage
        return self.copy(t, contiguous_strides(t.shape))

    def _runs_channels_last(self, op: GraphOp, args) -> bool:
        return (
            self.layout.channels_last
            and op.target == CONVOLUTION
            and isinstance(args[0], LTensor)
            and len(args[0].shape) in (4, 5)
            and 0 not in args[0].shape
        )

    # ---- the pass
    def value(self, a):
        if isinstance(a, Value):
            return self.env[id(a)]
        if isinstance(a, tuple):
            return tuple(self.value(x) for x in a)
        return a

    def lower_op(self, op: GraphOp) -> None:
        self.op = op
        args = [self.value(a) for a in op.args]
        kwargs = {k: self.value(v) for k, v in op.kwargs}
        try:
            results = self._lowered(op, args, kwargs)
        except (NotLowerable, TypeError):
            # TypeError: the rule does not take these arguments (an overload
            # or keyword it does not know); ATen does.
            results = None
        if results is None:
            results = self.extern(op, args, tuple(sorted(kwargs.items())))
        results = [results] if isinstance(results, LTensor) else list(results)
        for value, tensor in zip(op.results, results):
            want = (value.type.dtype, tuple(value.type.shape))
            if (tensor.dtype, tuple(tensor.shape)) != want:
                raise _error(
                    op,
                    f"internal: lowering {op.target} gave {tensor.dtype}{list(tensor.shape)}, "
                    f"expected {want[0]}{list(want[1])}",
                )
            self.env[id(value)] = tensor

    def _lowered(self, op: GraphOp, args, kwargs):
        target = op.target
        if target in STORAGE_VIEWS and args and isinstance(args[0], LTensor):
            args = [self._in_eager_layout(args[0])] + list(args[1:])
        if target == CLONE and kwargs.get("memory_format") == Enum("contiguous_format"):
            return self._contiguous_clone(args[0])
        if target in VIEWS:
            views = VIEWS[target](*args, **kwargs)
            if isinstance(views, tuple) and len(views) != len(op.results):
                raise NotLowerable(f"{len(views)} views for {len(op.results)} results")
            return views
        if op.results and all(0 in r.type.shape for r in op.results):
            # Nothing to compute: an empty result needs no body (whose
            # indirect index into an empty input would have no extent).
            return [self.pointwise(r.type.shape, r.type.dtype, lambda b: b.const(0)) for r in op.results]
        if target in POINTWISE and len(op.results) == 1:
            return self._pointwise(op, args, kwargs)
        if target in NODE_RULES:
            return NODE_RULES[target](self, op, *args, **kwargs)
        return None

    def _contiguous_clone(self, t: LTensor) -> LTensor:
        """`clone(memory_format=contiguous_format)` (what `.contiguous()`
        captures as): of a buffer laid out otherwise (a pool's channels-last
        result, as its input), a contiguous copy, as eager's; else a view, as
        any clone (a view's readers index through it, and the program's
        outputs are copied where eager copied: _output_buffer)."""
        if not t.is_buffer or _contiguous(t.shape, t.buffer.type.strides):
            return t
        return self.copy(t, contiguous_strides(t.shape))

    def _pointwise(self, op: GraphOp, args, kwargs) -> LTensor:
        spec = POINTWISE[op.target]
        out = op.results[0].type
        promoted = _promoted(op, spec.promote_args)
        compute = {
            "out": lambda: compute_dtype(out.dtype),
            "promote": lambda: compute_dtype(promoted),
            "bool": lambda: "b8",
        }[spec.compute]()
        operands = None
        if compute_dtype(promoted) == compute != promoted:  # f16 or bf16 computed in f32
            exact = op.target in EXACT_SCALARS[self.device]
            # A 0-d tensor is a scalar to ATen's kernels on the CPU only.
            operands = Operands(promoted, exact, exact and self.device == "cpu")
        return self.pointwise(out.shape, out.dtype, lambda b: spec.fn(b, *args, **kwargs), compute, operands)


def _extern_strides(target: str, args, kwargs, results, device: str) -> list[tuple[int, ...]]:
    """The strides ATen gives the results (from a run on fake tensors);
    contiguous when the op has no meta kernel (the runtime then copies into
    that layout)."""
    try:
        tensors = shape_call(target, args, kwargs, device)
    except Exception:
        tensors = None
    if tensors is None or len(tensors) != len(results):
        return [contiguous_strides(r.type.shape) for r in results]
    out = []
    for r, t in zip(results, tensors):
        strides = tuple(int(s) for s in t.stride())
        if tuple(t.shape) != tuple(r.type.shape) or not _dense(t.shape, strides):
            strides = contiguous_strides(r.type.shape)
        out.append(strides)
    return out


def _contiguous(shape, strides) -> bool:
    """Row-major strides, whatever those of dims of size 1."""
    expected = contiguous_strides(shape)
    return all(st == e for s, st, e in zip(shape, strides, expected) if s > 1)


def _dense(shape, strides) -> bool:
    """Whether a layout covers exactly numel elements with no overlap (a permutation of dims)."""
    dims = sorted((st, s) for s, st in zip(shape, strides) if s > 1)
    expected = 1
    for st, s in dims:
        if st != expected:
            return False
        expected *= s
    return True


def _first_order_channels_last(operands, shape: tuple) -> bool:
    """Whether the first of `operands` that spans the result's dimensions
    (of its rank, broadcast along none: a concatenation's parts count) with
    strides that order them (not a gather) orders them as channels-last
    does."""
    for t in operands:
        if len(t.shape) != len(shape) or any(n == 1 < m for n, m in zip(t.shape, shape)):
            continue
        strides = view_strides(t)
        if strides is None or 0 in (st for st, n in zip(strides, shape) if n != 1):
            continue
        return in_channels_last_order(shape, strides)
    return False


def _tensors(args):
    """The LTensors among (nested) arguments."""
    for a in args:
        if isinstance(a, LTensor):
            yield a
        elif isinstance(a, (tuple, list)):
            yield from _tensors(a)


def lower(module: Module, ctx=None) -> Module:
    mode = ctx.options.layout if ctx is not None else "keep"
    device = "cuda" if module_device(module).startswith("cuda") else "cpu"
    plan = decide_layout(module, mode, device, ctx is not None and ctx.target.channels_last)
    state = Lowering(module, plan)
    made_by = {}
    for op in module.graph:
        state.lower_op(op)
        made_by.update({id(r): op for r in op.results})
    state.op = None

    # Storage an eager copy must not share: the inputs', and a buffer that
    # more than one output (or update) would otherwise return.
    returned_buffers = [
        id(state.env[id(v)].buffer) for v in (*module.outputs, *(v for _, v in module.updates))
    ]
    shared = {id(i.value) for i in module.inputs}
    shared |= {b for b in returned_buffers if returned_buffers.count(b) > 1}

    # An output that is an updated input's new value is that input, as in
    # eager (`x.add_(1); return x`): its update writes it before the return.
    updated = {id(value): target for target, value in module.updates}

    def returned(v, update=False):
        if not update and id(v) in updated:
            return updated[id(v)]
        copy = not update and _copied_in_eager(v, made_by)
        return _output_buffer(state, state.env[id(v)], made_by.get(id(v)), copy, shared)

    outputs = tuple(returned(v) for v in module.outputs)
    updates = tuple((target, returned(value, update=True)) for target, value in module.updates)
    lowered = Module(
        stage="lower",
        source=module.source,
        version=module.version,
        options=module.options,
        inputs=module.inputs,
        nodes=state.nodes,
        outputs=outputs,
        updates=updates,
        layout=_decision(plan),
    )
    return unfuse_bias(lowered, state.device)


def _decision(plan: LayoutPlan):
    """The module's `layout` line: none where there was nothing to decide."""
    if plan == KEEP:
        return None
    return ("channels_last" if plan.channels_last else "keep", (("reason", plan.reason),))


def _copied_in_eager(v: Value, made_by: dict) -> bool:
    """Whether eager's result `v` has storage of its own although lowering
    made it a view: a copy (clone, contiguous, flip...) after views only."""
    op = made_by.get(id(v))
    while op is not None and op.target in VIEWS:
        if op.target in COPIES:
            return True
        op = made_by.get(id(op.args[0])) if op.args and isinstance(op.args[0], Value) else None
    return False


def _output_buffer(state: Lowering, t: LTensor, op: GraphOp | None, copy: bool, shared: set) -> Value:
    """An output is a buffer (an input returned as is stays itself, as in
    eager); a strided view of one is returned as an `aten.as_strided` view,
    any other view is copied, by a clone located at the op that made it.
    A `copy` (eager copied: `x.clone()`, `x.t().contiguous()`) is returned
    in a contiguous buffer of its own when lowering made it a view or a
    buffer in `shared` (an input, one another output returns), so that it
    neither shares storage nor keeps a view's strides."""
    if t.is_buffer and not state.chose_channels_last(t.buffer) and not (copy and id(t.buffer) in shared):
        return t.buffer
    state.op = GraphOp((), "aten.clone.default", (), (), op.loc if op is not None else None)
    chosen = state.layout.channels_last and is_channels_last(t.buffer.type.shape, t.buffer.type.strides)
    view = None if copy or chosen else state.strided_view(t)
    if view is not None:
        # A reshaped or transposed result is returned as a view, as eager does.
        state.op = None
        return view
    copy = state.copy(t).buffer
    state.op = None
    return copy
