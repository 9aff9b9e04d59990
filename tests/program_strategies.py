"""Hypothesis strategies shared by the tests: random elementwise programs."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from hypothesis import strategies as st

UNARY = {
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "neg": torch.neg,
    "abs": torch.abs,
    "exp": torch.exp,
    "sin": torch.sin,
    "gelu": F.gelu,
    "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "silu": F.silu,
    "leaky_relu": lambda t: F.leaky_relu(t, 0.2),
    "hardtanh": F.hardtanh,
    "mul_scalar": lambda t: t * 0.5,
    "add_scalar": lambda t: t + 3,
}
BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "where_gt": lambda a, b: torch.where(a > b, a, b),
}
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


@st.composite
def elementwise_programs(draw):
    """(description, fn, inputs): a random DAG of 1-12 ops over 1-3 inputs."""
    rank = draw(st.integers(0, 3))
    base = draw(st.lists(st.sampled_from([1, 2, 3, 37]), min_size=rank, max_size=rank))
    specs = []
    for _ in range(draw(st.integers(1, 3))):
        k = draw(st.integers(0, rank))
        shape = [draw(st.sampled_from([d, 1])) for d in base[rank - k :]]
        dtype = draw(st.sampled_from(["f32"] * 6 + ["f16", "bf16"]))
        specs.append((tuple(shape), dtype))
    nvalues = len(specs)
    plan = []
    for _ in range(draw(st.integers(1, 12))):
        if draw(st.booleans()):
            name = draw(st.sampled_from(sorted(UNARY)))
            plan.append((name, (draw(st.integers(0, nvalues - 1)),)))
        else:
            name = draw(st.sampled_from(sorted(BINARY)))
            a, b = draw(st.integers(0, nvalues - 1)), draw(st.integers(0, nvalues - 1))
            plan.append((name, (a, b)))
        nvalues += 1
    extra = draw(st.lists(st.integers(0, nvalues - 2), max_size=2, unique=True)) if nvalues > 1 else []
    outputs = [nvalues - 1] + extra

    def fn(*xs):
        values = list(xs)
        for name, args in plan:
            op = UNARY.get(name) or BINARY[name]
            values.append(op(*(values[a] for a in args)))
        return tuple(values[k] for k in outputs)

    gen = torch.Generator().manual_seed(0)
    inputs = [torch.randn(shape, generator=gen).to(DTYPES[dtype]) for shape, dtype in specs]
    return (specs, plan, outputs), fn, inputs
