"""Moving a matmul's bias into the loops that read its result, as
Inductor's `unfuse_bias_add_to_pointwise` does.

`aten.addmm(bias, x, w)` makes the library write the bias over the whole
[M, N] result and then add the product into it: one more pass over the
result than `aten.mm` makes. When every reader of the result is a loop
node, the bias is instead added where those readers load the result: an
`aten.mm` and a pointwise node `mm + bias`, which the scheduler fuses into
(or inlines into) each reader, so the add costs a load of the bias and
nothing else, and the mm alone is faster than addmm (measured:
docs/design-notes.md, "Lowering").

The rewrite keeps addmm where the result is returned or read by another
extern call (a matmul, a fallback): there the add would be a pass of its own.
Only float32 and float64 are rewritten: in a half type, mm rounds the product
to the type before the bias is added, a second rounding that addmm does not
make.

A convolution's bias on the GPU is moved the same way, as Inductor's
convolution lowering does: cuDNN takes no bias, and ATen adds it in a pass
of its own over the result after the convolution (in the result's dtype,
so the rewrite rounds as eager does, in every dtype). On the CPU oneDNN
adds the bias inside the convolution, and the call keeps it.
"""

from __future__ import annotations

from ir_text import BufferType, ExternNode, LoopNode, Module, Value, contiguous_strides
from scheduler import users

from .body import BodyBuilder, compute_dtype
from .tensors import of_buffer

ADDMM = "aten.addmm.default"
MM = "aten.mm.default"
CONVOLUTION = "aten.convolution.default"
DTYPES = frozenset({"f32", "f64"})


def unfuse_bias(module: Module, device: str) -> Module:
    """The module with each addmm whose readers are all loop nodes split into
    mm + a pointwise bias add (the add keeps addmm's result value, so its
    readers are unchanged)."""
    readers = users(module)
    nodes = []
    for node in module.nodes:
        if _splittable(node, readers):
            nodes.extend(_split(node, device))
        elif device == "cuda" and _conv_with_bias(node, readers):
            nodes.extend(_split_conv(node, device))
        else:
            nodes.append(node)
    module.nodes = nodes
    return module


def _splittable(node, readers: dict[int, list]) -> bool:
    """An addmm of plain floats, in a contiguous layout, whose result only
    loop nodes read (not an extern call, and not the program's return)."""
    if node.kind != "extern" or node.target != ADDMM or node.kwargs or len(node.args) != 3:
        return False
    if not all(isinstance(a, Value) for a in node.args):
        return False
    (result,) = node.results
    t = result.type
    read_by = readers[id(result)]
    return (
        bool(read_by)
        and all(isinstance(u, LoopNode) for u in read_by)
        and t.dtype in DTYPES
        and all(a.type.dtype == t.dtype for a in node.args)
        and tuple(t.strides) == contiguous_strides(t.shape)
    )


def _split(node: ExternNode, device: str) -> list:
    bias, x, w = node.args
    (result,) = node.results
    t = result.type
    product = Value("", BufferType(t.dtype, t.shape, contiguous_strides(t.shape)))
    b = BodyBuilder(t.shape, t.dtype, device=device)
    b.store(b.op("add", b.load(of_buffer(product)), b.load(of_buffer(bias))))
    return [
        ExternNode((product,), MM, (x, w), (), node.loc),
        LoopNode(result, "pointwise", tuple(t.shape), (), (("origin", ADDMM),), b.ops, node.loc),
    ]


def _conv_with_bias(node, readers: dict[int, list]) -> bool:
    """A convolution with a bias tensor whose result only loop nodes read."""
    if node.kind != "extern" or node.target != CONVOLUTION or node.kwargs or len(node.args) != 9:
        return False
    bias = node.args[2]
    read_by = readers[id(node.results[0])]
    return (
        isinstance(bias, Value)
        and len(bias.type.shape) == 1
        and bool(read_by)
        and all(isinstance(u, LoopNode) for u in read_by)
    )


def _split_conv(node: ExternNode, device: str) -> list:
    """The convolution without its bias, and `result = conv + bias[channel]`
    in the result's layout."""
    bias = node.args[2]
    (result,) = node.results
    t = result.type
    product = Value("", BufferType(t.dtype, t.shape, t.strides))
    per_channel = of_buffer(bias).derive(t.shape, lambda idx: (idx[1],))
    b = BodyBuilder(t.shape, compute_dtype(t.dtype), device=device)
    b.store(b.cast(b.op("add", b.value(of_buffer(product)), b.value(per_channel)), t.dtype))
    args = node.args[:2] + (None,) + node.args[3:]
    return [
        ExternNode((product,), CONVOLUTION, args, (), node.loc),
        LoopNode(result, "pointwise", tuple(t.shape), (), (("origin", CONVOLUTION),), b.ops, node.loc),
    ]
