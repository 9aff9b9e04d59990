"""Every loop-body op, on every dtype the verifier accepts it on, through both
backends, against the reference interpreter.

The lowering only emits some (op, dtype) pairs, but a person may write any
pair the verifier accepts into a dump and re-feed it: each such pair must
compile, and the generated code must agree with `lowering.interpret` (the
oracle). A module per (backend, dtype) holds one loop node per op, so each
test costs one compilation; when the module does not compile or run, it is
split by op family so the message says which family breaks.
"""

from __future__ import annotations

import pytest
import torch

import ir_text
import tirc
from codegen import load_output_code
from ir_text import BODY_OPS, TircError, parse, verify
from lowering import interpret
from tirc.cli import main

# The Triton interpreter warns about lanes that are masked off or hold NaN on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

N = 37
DTYPES = ("f32", "f64", "f16", "bf16", "i64", "i32", "i8", "u8", "b8")
CAST_TARGETS = ("f32", "f64", "f16", "bf16", "i64", "i32", "i8", "u8", "b8")
# Ops that get operands in (0.05, 0.95), where they are defined everywhere.
UNIT_DOMAIN = {"log", "log2", "log10", "log1p", "sqrt", "rsqrt", "asin", "acos", "pow"}
TOL = {"f32": (1e-4, 1e-5), "f64": (1e-7, 1e-7), "f16": (1e-3, 1e-3), "bf16": (1.6e-2, 1e-2)}


def _is_float(d):
    return d in ("f16", "bf16", "f32", "f64")


def _literal(d):
    return {"b8": "true"}.get(d, "2.5" if _is_float(d) else "-3" if d != "u8" else "3")


FAMILIES = {
    "rounding": "neg abs floor ceil round trunc sign",
    "math": "reciprocal exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan sinh cosh tanh sigmoid erf",
    "arith": "add sub mul maximum minimum truediv pow atan2 copysign floor_divide remainder fmod",
    "bitwise": "bitwise_and bitwise_or bitwise_xor bitwise_not",
    "compare": "eq ne lt le gt ge isnan signbit",
    "logical": "logical_and logical_or logical_xor logical_not",
    "misc": "where constant to_dtype",
}
FAMILY_OF = {op: family for family, ops in FAMILIES.items() for op in ops.split()}


def cases_for(dtype):
    """(label, node text builder args) for every op of BODY_OPS on `dtype`."""
    cases = []
    for op in sorted(BODY_OPS):
        if op in ("load", "store"):
            continue  # every case loads and stores
        if op == "to_dtype":
            for target in CAST_TARGETS:
                if target == dtype or (_is_float(dtype) and target == "u8"):
                    continue  # float -> u8 of a negative value is undefined in C
                cases.append((f"to_dtype->{target}", op, target))
        else:
            cases.append((op, op, None))
    return cases


def node_text(k, dtype, op, target):
    spec = BODY_OPS[op]
    x = "%u" if op in UNIT_DOMAIN and _is_float(dtype) else "%a"
    body = [f"  %0 = load {x}_{dtype}[i0] : {dtype}", f"  %1 = load %b_{dtype}[i0] : {dtype}"]
    if op == "to_dtype":
        result, expr = target, f"to_dtype(%0) {{dtype = {target}}}"
    elif op == "constant":
        result, expr = dtype, f"constant() {{value = {_literal(dtype)}}}"
    elif op == "where":
        body.append("  %2 = load %p_b8[i0] : b8")
        result, expr = dtype, "where(%2, %0, %1)"
    else:
        result = "b8" if spec.rule in ("compare", "logical") else dtype
        expr = f"{op}(%0)" if spec.arity == 1 else f"{op}(%0, %1)"
    n = len(body)
    body += [f"  %{n} = {expr} : {result}", f"  store %{n}"]
    head = f"%buf{k} = loop.pointwise [i0 < {N}] : {result}[{N}] strides [1] {{"
    return "\n".join([head, *body, "}"]), result


def module_text(backend, dtype, cases):
    lines = [
        'tirc 0.1 stage=lower source="body_ops.tir"',
        f'options {{backend = "{backend}", device = "cpu", fusion = true, max_fusion_size = 64}}',
    ]
    names = [f"a_{dtype}", f"b_{dtype}", f"u_{dtype}", "p_b8"]
    for seed, name in enumerate(names):
        d = name.split("_")[1]
        lines.append(f'input %{name} : {d}[{N}] {{device = "cpu", seed = {seed}, strides = [1]}}')
    lines.append("")
    results = []
    for k, (_, op, target) in enumerate(cases):
        text, result = node_text(k, dtype, op, target)
        lines.append(text)
        results.append(result)
    lines.append(f"return ({', '.join(f'%buf{k}' for k in range(len(cases)))})")
    return "\n".join(lines) + "\n", results


def make_inputs(module, seed=0):
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for inp in module.inputs:
        name, d = inp.value.hint, inp.value.type.dtype
        dt = ir_text.to_torch(d)
        if d == "b8":
            x = torch.rand(N, generator=gen) > 0.5
        elif _is_float(d):
            if name.startswith("u"):
                x = torch.rand(N, generator=gen, dtype=torch.float64) * 0.9 + 0.05
            else:
                x = torch.randn(N, generator=gen, dtype=torch.float64) * 2
            x = x.to(dt)
        elif d == "u8":
            x = torch.randint(1, 16, (N,), generator=gen).to(dt)
        else:
            x = torch.randint(1, 16, (N,), generator=gen) * (torch.randint(0, 2, (N,), generator=gen) * 2 - 1)
            x = x.to(dt)
        inputs.append(x)
    return inputs


def defined_cases(dtype):
    """The cases the verifier accepts and the interpreter gives a value for."""
    kept = []
    for case in cases_for(dtype):
        text, _ = module_text("cpp", dtype, [case])
        try:
            module = verify(parse(text, "body_ops.tir"))
        except TircError:
            continue  # rejected by the verifier: nothing to compile
        try:
            interpret(module, make_inputs(module))
        except (RuntimeError, TypeError):
            continue  # no reference semantics (e.g. neg of a bool in ATen)
        kept.append(case)
    return kept


def compile_and_compare(backend, dtype, cases, directory, capsys):
    """A list of 'label: problem' for the cases whose code is wrong."""
    text, results = module_text(backend, dtype, cases)
    source = directory / "body_ops.tir"
    directory.mkdir(parents=True, exist_ok=True)
    source.write_text(text)
    out = directory / "out"
    code = main(["compile", str(source), "--dump-after=memplan", "--dump-dir", str(out)])
    err = capsys.readouterr().err.strip()
    if code != 0:
        return [f"{c[0]}: compile failed: {err.splitlines()[-1] if err else code}" for c in cases]
    module = parse(text, str(source))
    inputs = make_inputs(module, seed=1)
    expected = interpret(module, [x.clone() for x in inputs])
    try:
        actual = load_output_code((out / "output_code.py").read_text()).call([x.clone() for x in inputs])
    except Exception as e:  # noqa: BLE001 - reported per case below
        lines = str(e).strip().splitlines() or [""]
        first = next((line for line in lines if "error:" in line), lines[0])
        return [f"{c[0]}: running failed: {type(e).__name__}: {first.strip()[:300]}" for c in cases]
    problems = []
    for (label, _, _), result, a, e in zip(cases, results, actual, expected):
        rtol, atol = TOL.get(result, (0.0, 0.0))
        try:
            torch.testing.assert_close(a, e, rtol=rtol, atol=atol, equal_nan=True)
        except AssertionError as mismatch:
            detail = " ".join(str(mismatch).split())[:240]
            problems.append(f"{label}: {detail}")
    return problems


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", ("cpp", "triton"))
def test_body_ops_match_interpreter(backend, dtype, tmp_path, capsys):
    cases = defined_cases(dtype)
    assert cases, f"no body op is accepted on {dtype}"
    problems = compile_and_compare(backend, dtype, cases, tmp_path / "all", capsys)
    if problems and all(" failed: " in p for p in problems):
        # The module as a whole does not build or run: find which families break.
        problems = []
        for family in FAMILIES:
            group = [c for c in cases if FAMILY_OF[c[1]] == family]
            if group:
                found = compile_and_compare(backend, dtype, group, tmp_path / family, capsys)
                if found and all(" failed: " in p for p in found):
                    labels = ", ".join(c[0] for c in group)
                    found = [f"family {family} ({labels}): {found[0].split(': ', 1)[1]}"]
                problems += found
    assert not problems, f"{len(problems)} problem(s) with {dtype} body ops on {backend}:\n" + "\n".join(
        problems
    )


def test_every_body_op_is_exercised():
    """The cases above cover BODY_OPS (so a new op cannot slip past them); the
    structural ops are exercised through lowered programs in tests/lowering."""
    structural = {"load", "store", "index", "indirect", "reduce", "scan"}
    covered = {op for d in DTYPES for _, op, _ in defined_cases(d)} | structural
    assert covered == set(BODY_OPS), sorted(set(BODY_OPS) - covered)


@pytest.mark.parametrize("backend", ("cpp", "triton"))
def test_pow_of_signed_zeros_keeps_the_sign_for_odd_powers(backend):
    """pow(-0.0, odd n) is -0.0 (n > 0) or -inf (n < 0), as in eager; even
    powers and +0.0 give +0.0 and +inf."""
    x = torch.tensor([-0.0, 0.0, -0.0, 0.0, -0.0, -0.0, 0.0, -2.0])
    e = torch.tensor([-1.0, -1.0, 3.0, 3.0, 2.0, -2.0, -2.0, 3.0])
    compiled = tirc.compile(torch.pow, [x, e], backend=backend)
    got, want = compiled(x, e), torch.pow(x, e)
    assert torch.equal(got, want) and torch.equal(torch.signbit(got), torch.signbit(want)), (got, want)
