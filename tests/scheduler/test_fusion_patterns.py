"""Fusion asserted by kernel counts (as tinygrad's check_schedule) and by
results against eager PyTorch on fresh random inputs, on both backends:
each row-reduction chain (softmax, layer norm, RMS norm, cross-entropy, ...)
is one kernel, pointwise prologues and epilogues join it, and a reader that
broadcasts or transposes a cheap pointwise producer recomputes it."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from matching import assert_matches

import tirc
from scheduler.inline import MAX_SHARED_READS


def loop_kernels(program) -> int:
    module = program.compiled.module
    externs = {id(n.result) for n in module.nodes if n.kind == "extern"}
    return sum(1 for k in module.kernels if not any(id(v) in externs for v in k.nodes))


def softmax(x):
    return torch.softmax(x, -1)


def log_softmax(x):
    return torch.log_softmax(x, -1)


def softmax_dim0(x):
    return torch.softmax(x, 0)


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def rms_norm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def gelu_bias(x, b):
    return F.gelu(x + b, approximate="tanh")


def cross_entropy_rows(x, t):
    return F.cross_entropy(x, t, reduction="none")


def cross_entropy_mean(x, t):
    return F.cross_entropy(x, t)


def add_layer_norm(x, r, w, b):
    s = x + r
    return s, F.layer_norm(s, (s.shape[-1],), w, b)


def attention_softmax(s, mask):
    return torch.softmax(s * 0.125 + mask, -1)


def bias_broadcast(x, b):
    return torch.relu(x + b * 2.0)


def transposed_read(x, y):
    return (x.t() * 2.0) + y


def sum_and_max(x):
    return x.sum(-1), x.amax(-1)


def column_sum_of_exp(x):
    return torch.exp(x).sum(0)


def cumsum_with_pointwise(x):
    return torch.cumsum(x * 2.0, -1).sigmoid() + x


def channel_norm(x, y_nhwc, w, b):
    """A layer norm over the channels of an NCHW map (ConvNeXt's and Restormer's), of a sum with a
    channels-last operand: the sum's dimensions (c, h, w) meet the kernel's (pixel, channel) space
    only as digits of its pixel variable."""
    s = x + y_nhwc.permute(0, 3, 1, 2)
    n, c, h, w_ = s.shape
    t = s.flatten(2).transpose(1, 2)
    mu, var = t.mean(-1, keepdim=True), t.var(-1, keepdim=True, unbiased=False)
    t = (t - mu) / torch.sqrt(var + 1e-5) * w + b
    return s, t.transpose(1, 2).reshape(n, c, h, w_)


def _rows(n=37, c=129, dtype=torch.float32):
    return torch.randn(n, c, dtype=dtype)


def _targets(n=37, c=129):
    return torch.randint(0, c, (n,))


# (program, inputs, loop kernels): one kernel per row-reduction chain. A
# final reduction over the rows (the mean of a loss) is a second chain: on
# the cpp backend it runs as a second loop nest of the same kernel, as
# Inductor's C++ backend does; Triton launches it as a kernel of its own.
CASES = {
    "softmax": (softmax, lambda: [_rows()], 1),
    "log_softmax": (log_softmax, lambda: [_rows()], 1),
    "softmax_dim0": (softmax_dim0, lambda: [_rows()], 1),
    "layer_norm": (layer_norm, lambda: [_rows(), torch.randn(129), torch.randn(129)], 1),
    "rms_norm": (rms_norm, lambda: [_rows(), torch.randn(129)], 1),
    "gelu_bias": (gelu_bias, lambda: [_rows(), torch.randn(129)], 1),
    "cross_entropy_rows": (cross_entropy_rows, lambda: [_rows(), _targets()], 1),
    "cross_entropy_mean": (cross_entropy_mean, lambda: [_rows(), _targets()], 1),
    "add_layer_norm": (add_layer_norm, lambda: [_rows(), _rows(), torch.randn(129), torch.randn(129)], 1),
    "attention_softmax": (attention_softmax, lambda: [torch.randn(2, 3, 17, 33), torch.randn(17, 33)], 1),
    "bias_broadcast": (bias_broadcast, lambda: [_rows(), torch.randn(129)], 1),
    "transposed_read": (transposed_read, lambda: [torch.randn(129, 37), _rows()], 1),
    "sum_and_max": (sum_and_max, lambda: [_rows()], 1),
    "column_sum_of_exp": (column_sum_of_exp, lambda: [_rows()], 1),
    "cumsum_with_pointwise": (cumsum_with_pointwise, lambda: [_rows()], 1),
    "channel_norm": (
        channel_norm,
        lambda: [torch.randn(2, 37, 5, 7), torch.randn(2, 5, 7, 37), torch.randn(37), torch.randn(37)],
        1,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_count_and_result_cpp(name):
    fn, make_inputs, kernels = CASES[name]
    inputs = make_inputs()
    program = tirc.compile(fn, inputs, backend="cpp")
    assert loop_kernels(program) == kernels
    assert_matches(program(*inputs), fn(*inputs))


@pytest.mark.parametrize(
    "name", ["softmax", "layer_norm", "cross_entropy_mean", "sum_and_max", "softmax_dim0", "channel_norm"]
)
def test_kernel_count_and_result_triton(name):
    fn, make_inputs, kernels = CASES[name]
    inputs = make_inputs()
    program = tirc.compile(fn, inputs, backend="triton")
    assert loop_kernels(program) == kernels + (name == "cross_entropy_mean")
    assert_matches(program(*inputs), fn(*inputs))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_reduced_precision_softmax_and_norm(dtype):
    def fn(x, w):
        return torch.softmax(x, -1), F.layer_norm(x, (x.shape[-1],), w)

    inputs = [_rows(dtype=dtype), torch.randn(129, dtype=dtype)]
    program = tirc.compile(fn, inputs, backend="cpp")
    assert loop_kernels(program) == 1
    assert_matches(program(*inputs), fn(*inputs))


def row_and_column_sums(x):
    return x.sum(1), x.sum(0)


def test_unrelated_spaces_share_a_kernel_as_loop_nests_on_cpp_only():
    inputs = [_rows()]
    program = tirc.compile(row_and_column_sums, inputs, backend="cpp")
    kernels = program.compiled.module.kernels
    assert len(kernels) == 1 and kernels[0].nests == (1, 1)
    assert_matches(program(*inputs), row_and_column_sums(*inputs))
    program = tirc.compile(row_and_column_sums, inputs, backend="triton")
    assert loop_kernels(program) == 2
    assert_matches(program(*inputs), row_and_column_sums(*inputs))


def test_fusion_false_keeps_one_kernel_per_node():
    inputs = [_rows()]
    program = tirc.compile(softmax, inputs, backend="cpp", options={"fusion": False})
    module = program.compiled.module
    assert loop_kernels(program) == len(module.nodes) > 1
    assert_matches(program(*inputs), softmax(*inputs))


def test_inlining_drops_a_broadcast_producer_but_keeps_a_returned_one():
    def fn(x, b):
        scaled = b * 2.0  # [129], read broadcast over [37, 129]: recomputed per element
        return torch.relu(x + scaled)

    def keeps(x, b):
        scaled = b * 2.0
        return torch.relu(x + scaled), scaled

    inputs = [_rows(), torch.randn(129)]
    inlined = tirc.compile(fn, inputs).compiled.module
    assert {n.result.type.shape for n in inlined.nodes} == {(37, 129)}  # no [129] node left
    kept = tirc.compile(keeps, inputs)
    assert {n.result.type.shape for n in kept.compiled.module.nodes} == {(37, 129), (129,)}
    assert_matches(kept(*inputs), keeps(*inputs))
    program = tirc.compile(fn, inputs, options={"fusion": False})
    assert len(program.compiled.module.nodes) == 3  # fusion=false: no inlining either
    assert_matches(program(*inputs), fn(*inputs))


def _row_and_column_sums_twice(x):
    x = x.sum(1, keepdim=True) + x.sum(0, keepdim=True)
    return x.sum(1, keepdim=True) + x.sum(0, keepdim=True)


def _centre_and_shift(x):
    for _ in range(3):
        x = x - x.mean(-1, keepdim=True) * 0.5 + x.amax(0, keepdim=True) * 0.1
    return x


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("fn", [_row_and_column_sums_twice, _centre_and_shift])
def test_fusion_sees_cycles_through_kernels_formed_earlier(fn, backend):
    """Row and column reductions of one tensor, read back by each other's
    consumers: merging two groups can close a cycle through a third group
    (not through any single node), which left the kernels with no order."""
    x = torch.randn(37, 13)
    program = tirc.compile(fn, [x], backend=backend)
    # Sums of sums (magnitudes near 100): against float64, float32's error.
    torch.testing.assert_close(program(x), fn(x.double()).float(), rtol=1e-4, atol=1e-4)


def _padded_stream(x):
    # WaveNet's residual stream: each layer adds a function of the stream
    # shifted right (a causal convolution's padded input).
    for k in range(6):
        x = x + torch.tanh(F.pad(x, (2**k, 0))[..., : x.shape[-1]]) * 0.5
    return x


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_a_shared_wide_chain_is_read_not_recomputed(backend):
    # Recomputing the stream at each shifted read would re-read every
    # earlier layer (twice as many loads a layer); it is read from memory
    # once its recomputation reads more than MAX_SHARED_READS buffers.
    inputs = [torch.randn(3, 37, 129)]
    program = tirc.compile(_padded_stream, inputs, backend=backend)
    loads = [sum(op.op == "load" for op in n.body) for n in program.compiled.module.nodes]
    assert max(loads) <= MAX_SHARED_READS  # 7 when each layer recomputed the stream
    fresh = [torch.randn(3, 37, 129)]
    assert_matches(program(*fresh), _padded_stream(*fresh))


def _relative_bias_softmax(scores, table, index, regions):
    # Swin: a relative position bias gathered from a table, and a mask that
    # compares window-partitioned region ids, both broadcast over the batch
    # and the heads of the scores.
    bias = table[index.view(-1)].view(9, 9, 3).permute(2, 0, 1)
    windows = regions.view(2, 3, 2, 3).permute(0, 2, 1, 3).reshape(4, 9)
    mask = (windows[:, :, None] != windows[:, None, :]).float() * -100.0
    return torch.softmax(scores + bias + mask[:, None], -1)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_a_broadcast_read_of_a_gather_reads_it_from_memory(backend):
    def make():
        return [
            torch.randn(5, 4, 3, 9, 9),
            torch.randn(13, 3),
            torch.randint(0, 13, (9, 9)),
            torch.randint(0, 3, (6, 6)),
        ]

    program = tirc.compile(_relative_bias_softmax, make(), backend=backend)
    module = program.compiled.module
    decoding = [
        n
        for n in module.nodes
        if any(
            op.op == "indirect" or (op.op == "load" and "floordiv" in str(op.attr("index"))) for op in n.body
        )
    ]
    # The gather and the mask each stay a node of their own size, never
    # recomputed per score (5 x 4 x 3 x 9 x 9 elements).
    assert decoding and all(n.result.type.numel < 5 * 4 * 3 * 81 for n in decoding)
    fresh = make()
    assert_matches(program(*fresh), _relative_bias_softmax(*fresh))
