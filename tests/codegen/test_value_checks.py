"""Values eager PyTorch raises on, on the CPU: indirect indices out of range
and integer division by zero. tirc's C++ kernels raise the same after the
kernel (which read 0 in a bad index's place instead of memory outside the
buffer, and gave 0 for a division by zero instead of trapping), and so does
the reference interpreter. Triton kernels check indices alone (on a GPU,
integer division by zero does not raise in eager either): interpreted, as
the C++ kernels do; compiled for a GPU, with a device assert, rendered here
and run by tests/gpu/gpu_indices.py."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import codegen.wrapper
import lowering
import tirc
from ir_text import parse

W = torch.randn(17, 8)

# name: (program of (w, index), an index tensor with one bad entry, its value)
CASES = {
    "index_past_the_end": (lambda w, i: w[i] * 2, [1, 20, 3], 20),
    "index_before_minus_size": (lambda w, i: w[i] * 2, [1, -18, 3], -18),
    "index_of_the_inner_dim": (lambda w, i: w[:, i] + 1, [1, 8], 8),
    "gather": (lambda w, i: torch.gather(w, 1, i.expand(17, -1)), [0, 9], 9),
    "embedding": (lambda w, i: F.embedding(i, w).sum(1), [0, 17, 4], 17),
    "index_select_then_sum": (lambda w, i: w.index_select(0, i).sum(1), [0, 170], 170),
    # Negative indices count from the end in advanced indexing only.
    "gather_negative": (lambda w, i: torch.gather(w, 1, i.expand(17, -1)), [0, -1], -1),
    "embedding_negative": (lambda w, i: F.embedding(i, w).sum(1), [0, -2, 4], -2),
    "index_select_negative": (lambda w, i: w.index_select(0, i) * 3, [-17, 1], -17),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cpp_kernel_raises_on_an_index_out_of_range(name, tmp_path):
    fn, bad, value = CASES[name]
    bad = torch.tensor(bad)
    good = bad.clamp(0, 7)
    compiled = tirc.compile(fn, [W, good], backend="cpp", dump_after="lower", dump_dir=tmp_path)
    torch.testing.assert_close(compiled(W, good), fn(W, good))
    with pytest.raises((IndexError, RuntimeError)):
        fn(W, bad)
    with pytest.raises(IndexError, match=f"index {value} is out of bounds for a dimension of size") as info:
        compiled(W, bad)
    assert "test_value_checks.py:" in str(info.value), info.value
    # The same inputs through the reference interpreter.
    module = parse((tmp_path / "02-lower.tir").read_text(), "02-lower.tir")
    torch.testing.assert_close(lowering.interpret(module, [W, good])[0], fn(W, good))
    with pytest.raises(IndexError, match=f"index {value} is out of bounds"):
        lowering.interpret(module, [W, bad])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the interpreter's masked-off lanes
@pytest.mark.parametrize("name", sorted(CASES))
def test_triton_kernel_raises_on_an_index_out_of_range(name):
    fn, bad, value = CASES[name]
    bad = torch.tensor(bad)
    good = bad.clamp(0, 7)
    compiled = tirc.compile(fn, [W, good], backend="triton", device="cpu")
    torch.testing.assert_close(compiled(W, good), fn(W, good))
    with pytest.raises(IndexError, match=f"index {value} is out of bounds for a dimension of size") as info:
        compiled(W, bad)
    assert "test_value_checks.py:" in str(info.value), info.value
    # The next call, on good indices, starts from a clean slot.
    torch.testing.assert_close(compiled(W, good), fn(W, good))


def test_triton_gpu_launch_asserts_indices(tmp_path):
    """For a GPU, the kernel takes no error slot (None) and compiles with
    device asserts on, without Triton's integer overflow checks."""
    fn, bad, _ = CASES["embedding"]
    good = torch.tensor(bad).clamp(0, 7)
    tirc.compile(fn, [W, good], backend="triton", device="cpu", dump_after="memplan", dump_dir=tmp_path)
    (dump,) = tmp_path.glob("*memplan.tir")
    text = codegen.wrapper.generate(parse(dump.read_text(), dump.name), "triton", "cuda")
    assert "tl.device_assert(~bad" in text
    flat = " ".join(text.split()).replace("( ", "(")  # black may fold the launch over lines
    launch = flat[flat.index("_launch(k0,") :]
    launch = launch[: launch.index(")", launch.index("num_warps"))]
    assert ", None, " in launch and "debug=True, sanitize_overflow=False" in launch, launch
    assert "check_values" not in text and "error_tensor" not in text


def test_wrapped_negative_indices_still_match_eager():
    i = torch.tensor([[-17, 16], [-1, 0]])
    compiled = tirc.compile(lambda w, i: w[i] * 2, [W, i], backend="cpp")
    torch.testing.assert_close(compiled(W, i), W[i] * 2)


def _divisions(a, b):
    # Not trunc division: eager's traps (SIGFPE) on the minimum over -1.
    return a // b, a % b, torch.fmod(a, b)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8])
def test_integer_division_matches_eager_and_raises_on_zero(dtype):
    """Signed divisors of both signs, the minimum over -1 (which traps in C,
    and wraps in PyTorch), then a divisor of 0 somewhere in 129 elements."""
    low = torch.iinfo(dtype).min
    a = torch.randint(max(low, -100), 100, (129,), dtype=dtype)
    b = torch.randint(1, 9, (129,), dtype=dtype)
    if low < 0:
        b[1::2] *= -1
        a[0], b[0] = low, -1
    compiled = tirc.compile(_divisions, [a, b], backend="cpp")
    for got, want in zip(compiled(a, b), _divisions(a, b)):
        assert torch.equal(got, want), (got, want)
    b[77] = 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        _divisions(a, b)
    with pytest.raises(ZeroDivisionError, match="integer division by zero"):
        compiled(a, b)


def test_a_value_named_error_does_not_clash_with_the_error_slot():
    """C++ kernels take their error slot as `p_error`; an input named
    `error` gets another parameter name."""

    def divide(x, error):
        return x // error

    x, d = torch.randint(-50, 50, (37,)), torch.randint(1, 9, (37,))
    torch.testing.assert_close(tirc.compile(divide, [x, d], backend="cpp")(x, d), divide(x, d))
