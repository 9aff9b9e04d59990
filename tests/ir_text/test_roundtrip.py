"""Byte-exact round trip: `print_ir(parse(t)) == t` for every stage's dump.

A corpus of small elementwise programs, random elementwise graphs from
hypothesis, and random index expressions.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sympy
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from program_strategies import elementwise_programs
from tir_helpers import STAGE_ORDER, stage_texts

from ir_text import FloorDiv, Mod, index_var, parse, print_ir, render_index
from tirc.options import Options
from tirc.pipeline import Context, run_stages

HERE = Path(__file__)

# ---- the corpus


def relu(x):
    return torch.relu(x)


def gelu_both(x):
    return F.gelu(x), F.gelu(x, approximate="tanh")


def swish(x):
    return F.silu(x) + x * torch.sigmoid(x)


def hardtanh(x):
    return F.hardtanh(x, -0.5, 0.5)


def leaky(x):
    return F.leaky_relu(x, 0.1)


def broadcast_add(x, b):
    return x + b


def int_bool(a, b):
    mask = (a > b) & (a != 3)
    both = torch.logical_and(mask, a <= 5)
    return torch.where(both, a, b), mask, a == b


def promote(a, x):
    return a + x, a * 2.5, (a // 2) + 1


def half_types(h, bf):
    return h * 2 + 1, torch.sigmoid(bf) - bf


def scalar_input(x, s):
    return x * s + s


def several_outputs(x):
    return x + 1, torch.exp(x), x


class BiasGelu(torch.nn.Module):
    """A module: its parameter is lifted to an input."""

    def __init__(self):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.randn(5))

    def forward(self, x):
        y = F.gelu(x + self.bias)
        return y * torch.sigmoid(y)


def _ints(*shape):
    return torch.randint(-8, 9, shape)


CORPUS = {
    "relu": (relu, lambda: [torch.randn(4, 5)]),
    "gelu_exact_and_tanh": (gelu_both, lambda: [torch.randn(3, 7)]),
    "swish": (swish, lambda: [torch.randn(6)]),
    "hardtanh": (hardtanh, lambda: [torch.randn(3, 4)]),
    "leaky_relu": (leaky, lambda: [torch.randn(2, 3, 4)]),
    "broadcast_37x129": (broadcast_add, lambda: [torch.randn(37, 129), torch.randn(129)]),
    "int_bool": (int_bool, lambda: [_ints(4, 5), _ints(4, 5)]),
    "promote_int_float": (promote, lambda: [_ints(4, 5), torch.randn(4, 5)]),
    "f16_bf16": (half_types, lambda: [torch.randn(4, 5).half(), torch.randn(4, 5).bfloat16()]),
    "scalar_0dim": (scalar_input, lambda: [torch.randn(4, 5), torch.tensor(2.0)]),
    "several_outputs_and_input_output": (several_outputs, lambda: [torch.randn(4, 5)]),
    "module_with_parameter": (BiasGelu, lambda: [torch.randn(3, 5)]),
}


@pytest.fixture(scope="module")
def corpus_dumps():
    torch.manual_seed(0)
    out = {}
    for name, (fn, make_inputs) in CORPUS.items():
        if isinstance(fn, type):
            fn = fn()
        out[name] = stage_texts(fn, make_inputs(), source=HERE.name, path=str(HERE))
    return out


@pytest.mark.parametrize("stage", STAGE_ORDER)
@pytest.mark.parametrize("program", sorted(CORPUS))
def test_corpus_round_trip(corpus_dumps, program, stage):
    text = corpus_dumps[program][stage]
    assert print_ir(parse(text, f"{program}.tir")) == text


def test_corpus_dumps_carry_source_lines(corpus_dumps):
    """Every op carries loc(...) back to its line in this file (functions and
    modules alike), so loc round-trips too."""
    missing = []
    for program, texts in corpus_dumps.items():
        for stage in ("capture", "lower"):
            module = parse(texts[stage], f"{stage}.tir")
            items = module.graph if stage == "capture" else module.nodes
            if any(item.loc is None or item.loc.file != HERE.name for item in items):
                missing.append(f"{program}/{stage}")
    assert not missing, f"ops without loc(\"{HERE.name}\":N) in: {', '.join(missing)}"


def test_corpus_covers_the_listed_features(corpus_dumps):
    """The corpus really holds what it claims (so the round trip covers it)."""
    joined = {stage: "".join(d[stage] for d in corpus_dumps.values()) for stage in STAGE_ORDER}
    for needle in ("f16[", "bf16[", "i64[", "b8[", ": f32[] ", "strides = []", "%bias"):
        assert needle in joined["capture"], needle
    for needle in ("erf(", "tanh(", "where(", "logical_and(", "to_dtype(", "constant()"):
        assert needle in joined["lower"], needle
    assert "129*i0 + i1" in corpus_dumps["broadcast_37x129"]["lower"]
    assert "return (%buf0, %buf1, %x)" in corpus_dumps["several_outputs_and_input_output"]["lower"]
    assert "free %" in joined["memplan"] or "launch @k1" in joined["memplan"]


def _recorder(seen: dict):
    return lambda name, _module, text: seen.__setitem__(name, text)


@pytest.mark.parametrize("program", sorted(CORPUS))
def test_corpus_refeed_reproduces_later_dumps(corpus_dumps, program):
    """Re-feeding any stage's dump reproduces every later dump byte for byte."""
    texts = corpus_dumps[program]
    for k, stage in enumerate(STAGE_ORDER[:-1]):
        module = parse(texts[stage], f"{stage}.tir")
        seen: dict[str, str] = {}
        run_stages(module, Context(Options.from_pairs(module.options)), None, _recorder(seen))
        assert seen == {s: texts[s] for s in STAGE_ORDER[k + 1 :]}, f"re-fed from {stage}"


@pytest.mark.parametrize("source", ['quote"d.py', "back\\slash.py", "new\nline.py", "caf\u00e9 space.py"])
def test_odd_source_names_round_trip(source):
    """The source name lands in the header and in every loc(...): escaped both times."""
    texts = stage_texts(BiasGelu(), [torch.randn(3, 5)], source=source, path=str(HERE))
    for stage, text in texts.items():
        module = parse(text, f"{stage}.tir")
        assert module.source == source
        assert print_ir(module) == text, stage
        assert {op.loc.file for op in module.graph} | {n.loc.file for n in module.nodes} == {source}


# ---- random elementwise graphs


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(elementwise_programs())
def test_random_graph_round_trip(program):
    _description, fn, inputs = program
    texts = stage_texts(fn, inputs)
    for stage, text in texts.items():
        assert print_ir(parse(text, f"{stage}.tir")) == text, stage


# ---- index expressions

VARS = [index_var(f"i{k}") for k in range(4)]
RANGES = (2, 3, 4, 5)


def _index_exprs():
    var = st.sampled_from(VARS)
    leaves = st.one_of(
        var,
        st.integers(0, 64).map(sympy.Integer),
        st.tuples(var, st.integers(-9, 9)).map(lambda p: p[0] + p[1]),
        st.tuples(var, var).map(lambda p: p[0] - p[1]),
    )

    def extend(children):
        return st.one_of(
            st.tuples(children, children).map(lambda p: p[0] + p[1]),
            st.tuples(children, children).map(lambda p: p[0] - p[1]),
            st.tuples(children, children).map(lambda p: p[0] * p[1]),
            st.tuples(children, st.integers(-9, 9)).map(lambda p: p[0] * p[1]),
            st.tuples(children, st.integers(1, 16)).map(lambda p: FloorDiv(p[0], sympy.Integer(p[1]))),
            st.tuples(children, st.integers(1, 16)).map(lambda p: Mod(p[0], sympy.Integer(p[1]))),
        )

    return st.recursive(leaves, extend, max_leaves=8)


def _lower_module_text(index_text: str) -> str:
    dims = ", ".join(f"i{k} < {s}" for k, s in enumerate(RANGES))
    return (
        'tirc 0.1 stage=lower source="idx.py"\n'
        'options {backend = "cpp", device = "cpu", fusion = true, max_fusion_size = 64}\n'
        'input %x : f32[100000] {device = "cpu", seed = 0, strides = [1]}\n'
        "\n"
        f"%buf0 = loop.pointwise [{dims}] : f32[2, 3, 4, 5] strides [60, 20, 5, 1] {{\n"
        f"  %0 = load %x[{index_text}] : f32\n"
        "  store %0\n"
        "}\n"
        "return (%buf0)\n"
    )


@settings(max_examples=200, deadline=None)
@given(_index_exprs())
def test_index_text_round_trip(expr):
    text = _lower_module_text(render_index(expr))
    assert print_ir(parse(text, "idx.tir")) == text


@settings(max_examples=200, deadline=None)
@given(_index_exprs())
def test_index_parses_back_to_the_same_expression(expr):
    module = parse(_lower_module_text(render_index(expr)), "idx.tir")
    load = module.nodes[0].body[0]
    assert load.attr("index") == sympy.sympify(expr)


@pytest.mark.parametrize(
    "text",
    [
        "0",
        "i0",
        "60*i0 + 20*i1 + 5*i2 + i3",
        "i3 + 7",
        "i0 - i1",
        "-i0 + 5",
        "floordiv(i0 + 3*i1, 4)",
        "5*floordiv(i3, 2) + mod(i2, 3)",
        "(i0 + 1)*(i1 + 2)",
        "i0*i0",
    ],
)
def test_index_examples_round_trip(text):
    module_text = _lower_module_text(text)
    assert print_ir(parse(module_text, "idx.tir")) == module_text


_i0, _i1, _i2, _i3 = VARS


@pytest.mark.parametrize(
    "expr",
    [
        60 * _i0 + 20 * _i1 + 5 * _i2 + _i3,
        FloorDiv(_i0 + 3 * _i1, 4) + Mod(_i2, 3),
        5 * FloorDiv(_i3, 2) - Mod(_i2 + 1, 3) + 7,
        (_i0 + 1) * (_i1 + 2),
        _i0 * _i0 * _i1,
        # a negated or scaled product that starts with a parenthesized sum
        sympy.Mul(-1, _i0 - 1, _i1 + 2),
        sympy.Mul(2, _i0 + 1, _i1 + 1),
        _i0 - _i1 * (_i0 + 1),
    ],
    ids=str,
)
def test_rendered_index_round_trips(expr):
    text = _lower_module_text(render_index(expr))
    assert print_ir(parse(text, "idx.tir")) == text
