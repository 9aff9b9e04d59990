"""Every user-facing error in a dump gives one TircError, formatted
`FILE:LINE:COL: error: MESSAGE`, pointing at the offending line and naming
the problem; `tirc verify` prints that one line and exits 2."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import pytest
from tir_helpers import check_text, line_of, replace_once

from ir_text import TircError, parse
from tirc.cli import main as tirc_main

FILE = "edited.tir"
LOCATED = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.+)$")


@dataclass
class Case:
    dump: str  # key of the `dumps` fixture
    stage: str
    edit: Callable[[str], str]
    line: Callable[[str], int | set[int]]  # the offending line(s) of the edited text
    message: tuple  # substrings the message must contain (a tuple: any one of them)


def at(needle: str):
    return lambda text: line_of(text, needle)


def _swap_lines(first: str, second: str):
    return lambda t: replace_once(t, f"{first}\n{second}\n", f"{second}\n{first}\n")


def _truncate(fraction: float):
    def cut(text: str) -> str:
        k = int(len(text) * fraction)
        while text[k - 1] in ' \n"':  # end inside a token or a line, not at a boundary
            k += 1
        return text[:k]

    return cut


def _last_line(text: str) -> int:
    return len(text.splitlines())


def _node_or_close(buffer: str):
    """The loop node's first line or its closing `}` line."""

    def lines(text: str):
        first = line_of(text, f"{buffer} = loop.pointwise")
        rest = text.splitlines()[first:]
        close = first + 1 + next(k for k, line in enumerate(rest) if line.startswith("}"))
        return {first, close}

    return lines


CASES = {
    # ---- syntax
    "truncated_lower": Case("chain", "lower", _truncate(0.5), _last_line, ("unexpected end of file",)),
    "truncated_memplan": Case(
        "chain_unfused", "memplan", _truncate(0.93), _last_line, ("unexpected end of file",)
    ),
    "unexpected_token": Case(
        "chain",
        "capture",
        lambda t: replace_once(t, "aten.relu.default(%0)", "aten.relu.default(%0))"),
        at("aten.relu.default(%0))"),
        ("unexpected ')'",),
    ),
    "unknown_stage": Case(
        "chain",
        "capture",
        lambda t: replace_once(t, "stage=capture", "stage=optimize"),
        lambda t: 1,
        ("unknown stage 'optimize'",),
    ),
    "seed_out_of_range": Case(
        "chain",
        "fusion",
        lambda t: replace_once(t, "seed = 0,", "seed = 99999999999999999999,"),
        at("input %x"),
        ("99999999999999999999 is outside the range of int64",),
    ),
    "seed_not_an_integer": Case(
        "chain",
        "fusion",
        lambda t: replace_once(t, "seed = 0,", "seed = 1e400,"),
        at("input %x"),
        ("seed must be an integer, not inf",),
    ),
    "device_not_a_string": Case(
        "chain",
        "lower",
        lambda t: replace_once(t, '{device = "cpu", seed = 0', "{device = 1, seed = 0"),
        at("input %x"),
        ('device must be a string, "cpu" or "cuda", not 1',),
    ),
    "device_with_a_newline": Case(
        "chain",
        "lower",
        lambda t: replace_once(t, '{device = "cpu", seed = 0', '{device = "cpu\\n", seed = 0'),
        at("input %x"),
        ('unknown device "cpu\\n" (expected "cpu" or "cuda")',),
    ),
    "size_outside_int64": Case(
        "chain",
        "lower",
        lambda t: replace_once(t, "input %x : f32[4, 5]", "input %x : f32[4, 99999999999999999999]"),
        at("input %x"),
        ("99999999999999999999 is outside the range of int64",),
    ),
    "size_count_outside_int64": Case(
        "chain",
        "lower",
        lambda t: replace_once(t, "input %x : f32[4, 5]", "input %x : f32[4, 4611686018427387904]"),
        at("input %x"),
        ("f32[4, 4611686018427387904]: the sizes multiply to 18446744073709551616, more than int64 holds",),
    ),
    "input_storage_outside_int64_bytes": Case(
        "chain",
        "lower",
        # 3 * 2**61 + 5 elements fit int64; their bytes (f32) do not.
        lambda t: replace_once(t, "strides = [5, 1]", "strides = [2305843009213693952, 1]"),
        at("input %x"),
        (
            "input %x: strides [2305843009213693952, 1] of f32[4, 5] span 6917529027641081861 elements"
            " (27670116110564327444 bytes); a storage must fit in 2**63 - 1 bytes",
        ),
    ),
    "buffer_storage_outside_int64": Case(
        "chain",
        "lower",
        lambda t: replace_once(
            t,
            '{origin = "aten.add.Tensor"} : f32[4, 5] strides [5, 1]',
            '{origin = "aten.add.Tensor"} : f32[4, 5] strides [4611686018427387904, 1]',
        ),
        at("%buf0 = loop.pointwise"),
        ("strides [4611686018427387904, 1] of f32[4, 5] span 13835058055282163717 elements",),
    ),
    "stray_brace_at_top_level": Case(
        "chain",
        "capture",
        lambda t: replace_once(t, "\ninput %x", "\n}\ninput %x"),
        lambda t: line_of(t, "input %x") - 1,
        ("unexpected '}'",),
    ),
    "control_character_in_a_token": Case(
        "chain",
        "capture",
        lambda t: replace_once(t, "aten.relu.default(%0)", 'aten.relu.default(%0) "\x1b\t"'),
        at("aten.relu.default("),
        ("unexpected '\"\\x1b\\t\"'",),
    ),
    "section_of_another_stage": Case(
        "chain",
        "fusion",
        lambda t: replace_once(t, "stage=fusion", "stage=lower"),
        at("fusion {"),
        ("a lower-stage module has a 'fusion' section, which belongs to another stage",),
    ),
    "missing_section": Case(
        "chain",
        "fusion",
        lambda t: replace_once(t, "stage=fusion", "stage=memplan"),
        lambda t: 1,
        ("a memplan-stage module needs a 'wrapper' section",),
    ),
    "section_twice": Case(
        "chain",
        "memplan",
        lambda t: t + "\nwrapper {\n}\n",
        lambda t: len(t.splitlines()) - 1,
        ("a module has one 'wrapper' section",),
    ),
    "input_on_another_device": Case(
        "chain",
        "fusion",
        lambda t: replace_once(t, '{device = "cpu", seed = 0', '{device = "cuda", seed = 0'),
        at("input %x"),
        ('input %x is on "cuda" but the options\' device is "cpu"',),
    ),
    "unknown_dtype": Case(
        "chain",
        "capture",
        lambda t: replace_once(t, "input %x : f32[4, 5]", "input %x : f33[4, 5]"),
        at("input %x"),
        ("unknown dtype 'f33'",),
    ),
    "unknown_body_dtype": Case(
        "chain",
        "lower",
        lambda t: replace_once(t, "%1 = sigmoid(%0) : f32", "%1 = sigmoid(%0) : f33"),
        at("sigmoid("),
        ("unknown dtype 'f33'",),
    ),
    "unknown_option": Case(
        "chain",
        "lower",
        lambda t: replace_once(t, "fusion = true", "fusion = true, fusoin = false"),
        at("options {"),
        ("unknown option 'fusoin'",),
    ),
    # ---- names
    "undefined_value": Case(
        "chain",
        "capture",
        lambda t: replace_once(t, "aten.relu.default(%0)", "aten.relu.default(%nope)"),
        at("%nope"),
        ("undefined value %nope",),
    ),
    "undefined_buffer_in_load": Case(
        "chain",
        "lower",
        lambda t: replace_once(t, "load %buf2[5*i0 + i1]", "load %buf7[5*i0 + i1]"),
        at("%buf7"),
        ("undefined value %buf7",),
    ),
    "defined_twice": Case(
        "chain",
        "capture",
        lambda t: replace_once(t, "%1 = aten.relu.default", "%0 = aten.relu.default"),
        at("%0 = aten.relu.default"),
        ("%0", "defined twice"),
    ),
    "body_value_defined_twice": Case(
        "chain",
        "lower",
        lambda t: replace_once(t, "%1 = sigmoid(%0) : f32\n  store %1", "%0 = sigmoid(%0) : f32\n  store %0"),
        at("= sigmoid("),
        ("%0", "defined twice"),
    ),
    # ---- capture graphs (checked against ATen)
    "unknown_aten_op": Case(
        "chain",
        "capture",
        lambda t: replace_once(t, "aten.relu.default", "aten.not_an_op.default"),
        at("aten.not_an_op.default"),
        ("unknown op 'aten.not_an_op.default'",),
    ),
    "wrong_arity": Case(
        "chain",
        "capture",
        lambda t: replace_once(t, "aten.relu.default(%0)", "aten.relu.default(%0, %0)"),
        at("aten.relu.default"),
        ("aten.relu.default", "argument", "2"),
    ),
    "declared_shape_mismatch": Case(
        "chain",
        "capture",
        lambda t: replace_once(t, "aten.relu.default(%0) : f32[4, 5]", "aten.relu.default(%0) : f32[4, 6]"),
        at("aten.relu.default"),
        ("f32[4, 5]", "f32[4, 6]"),
    ),
    "declared_dtype_mismatch": Case(
        "chain",
        "capture",
        lambda t: replace_once(t, "aten.relu.default(%0) : f32[4, 5]", "aten.relu.default(%0) : f64[4, 5]"),
        at("aten.relu.default"),
        ("f32[4, 5]", "f64[4, 5]"),
    ),
    # ---- loop bodies
    "unknown_body_op": Case(
        "chain",
        "lower",
        lambda t: replace_once(t, "%1 = sigmoid(%0)", "%1 = frobnicate(%0)"),
        at("frobnicate"),
        ("unknown loop-body op 'frobnicate'",),
    ),
    "body_op_wrong_arity": Case(
        "chain",
        "lower",
        lambda t: replace_once(t, "%1 = sigmoid(%0)", "%1 = sigmoid(%0, %0)"),
        at("sigmoid(%0, %0)"),
        ("'sigmoid' takes 1 operand(s), got 2",),
    ),
    "body_dtype_mismatch": Case(
        "chain",
        "lower",
        lambda t: replace_once(t, "%1 = constant() {value = 1.0} : f32", "%1 = constant() {value = 1} : i64"),
        at("%2 = add(%0, %1)"),
        ("'add'", "f32", "i64"),
    ),
    "load_out_of_bounds": Case(
        "chain",
        "lower",
        lambda t: replace_once(t, "load %x[5*i0 + i1]", "load %x[5*i0 + i1 + 1]"),
        at("load %x["),
        ("[1, 20]", "20 elements"),
    ),
    "index_undefined_loop_variable": Case(
        "chain",
        "lower",
        lambda t: replace_once(t, "load %x[5*i0 + i1]", "load %x[5*i0 + i2]"),
        at("load %x["),
        ("'i2'", "not a loop variable"),
    ),
    "store_dtype_mismatch": Case(
        "chain",
        "lower",
        lambda t: replace_once(
            t,
            "%1 = sigmoid(%0) : f32\n  store %1",
            "%1 = sigmoid(%0) : f32\n  %2 = isnan(%1) : b8\n  store %2",
        ),
        lambda t: line_of(t, "isnan(") + 1,
        ("store of a b8 value into a f32 buffer",),
    ),
    "missing_store": Case(
        "chain",
        "lower",
        lambda t: replace_once(t, "  store %1\n", ""),
        _node_or_close("%buf3"),
        ("store",),
    ),
    # ---- derived facts and edited plans
    "stale_schedule_fact": Case(
        "chain",
        "schedule",
        lambda t: replace_once(t, "reads [%buf0[5*i0 + i1]]", "reads [%buf0[i1]]"),
        at("node %buf1"),
        ("[stale-fact]", "%buf1"),
    ),
    "stale_schedule_users": Case(
        "chain",
        "schedule",
        lambda t: replace_once(t, "users [@return]", "users [@foo]"),
        at("users [@foo]"),
        (("[stale-fact]", "@foo"),),
    ),
    "node_in_two_kernels": Case(
        "chain_unfused",
        "fusion",
        lambda t: replace_once(t, "kernel @k1 = fuse(%buf1)", "kernel @k1 = fuse(%buf0, %buf1)"),
        at("kernel @k1"),
        ("[one-kernel-per-node]", "%buf0", "@k0", "@k1"),
    ),
    "node_in_no_kernel": Case(
        "chain_unfused",
        "fusion",
        lambda t: replace_once(t, "  kernel @k3 = fuse(%buf3) {group = [20, 1]}\n", ""),
        lambda t: {line_of(t, "%buf3 = loop.pointwise"), line_of(t, "fusion {")},
        ("[one-kernel-per-node]", "%buf3", "no kernel"),
    ),
    "merge_different_sizes": Case(
        "two_sizes",
        "fusion",
        lambda t: re.sub(
            r"  kernel @k0 = .*\n  kernel @k1 = .*\n  refused.*\n",
            "  kernel @k0 = fuse(%buf0, %buf1) {group = [5, 1]}\n",
            t,
        ),
        at("kernel @k0"),
        ("[group]", "@k0"),
    ),
    "kernel_reads_later_kernel": Case(
        "chain_unfused",
        "fusion",
        _swap_lines(
            "  kernel @k0 = fuse(%buf0) {group = [20, 1]}", "  kernel @k1 = fuse(%buf1) {group = [20, 1]}"
        ),
        at("kernel @k1"),
        ("[kernel-order]", "@k1", "%buf0", "@k0"),
    ),
    "launch_reads_freed_buffer": Case(
        "chain_unfused",
        "memplan",
        lambda t: replace_once(t, "  reuse %buf1 as %buf2\n", "  free %buf1\n  alloc %buf2\n"),
        at("launch @k2"),
        ("[use-after-free]", "%buf1"),
    ),
    "wrong_launch_signature": Case(
        "chain_unfused",
        "memplan",
        lambda t: replace_once(t, "launch @k1(%buf0) -> (%buf1)", "launch @k1(%x) -> (%buf1)"),
        at("launch @k1"),
        ("[launch-signature]", "@k1(%buf0) -> (%buf1)"),
    ),
    "launch_twice": Case(
        "chain_unfused",
        "memplan",
        lambda t: replace_once(t, "  launch @k3(%buf2) -> (%buf3)\n", "  launch @k3(%buf2) -> (%buf3)\n" * 2),
        lambda t: [k for k, line in enumerate(t.splitlines(), 1) if "launch @k3" in line][1],
        ("[launch-order]",),
    ),
    "output_freed": Case(
        "chain_unfused",
        "memplan",
        lambda t: replace_once(
            t, "  launch @k3(%buf2) -> (%buf3)\n}", "  launch @k3(%buf2) -> (%buf3)\n  free %buf3\n}"
        ),
        at("free %buf3"),
        ("[output-freed]", "%buf3"),
    ),
}


def _edited(dumps, case: Case) -> str:
    original = dumps[case.dump][case.stage]
    assert check_text(original, FILE) is None, "the unedited dump must be valid"
    text = case.edit(original)
    assert text != original
    return text


def _expected_lines(case: Case, text: str) -> set[int]:
    lines = case.line(text)
    return lines if isinstance(lines, set) else {lines}


@pytest.mark.parametrize("name", sorted(CASES))
def test_error_is_located_and_named(dumps, name):
    case = CASES[name]
    text = _edited(dumps, case)
    err = check_text(text, FILE)
    assert isinstance(err, TircError), "the edit was accepted"
    formatted = err.format()
    assert formatted.isprintable(), formatted
    match = LOCATED.match(formatted)
    assert match, f"not FILE:LINE:COL: error: ...: {formatted!r}"
    assert match["file"] == FILE
    assert int(match["line"]) in _expected_lines(case, text), formatted
    assert 1 <= int(match["col"]) <= len(text.splitlines()[int(match["line"]) - 1]) + 1, formatted
    for part in case.message:
        options = part if isinstance(part, tuple) else (part,)
        assert any(o in match["msg"] for o in options), f"{part!r} not in {formatted!r}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_verify_prints_one_located_line(dumps, name, tmp_path, capsys):
    case = CASES[name]
    text = _edited(dumps, case)
    path = tmp_path / "edited.tir"
    path.write_text(text)
    code = tirc_main(["verify", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err, err
    match = LOCATED.match(err.strip())
    assert match and match["file"] == str(path), err
    assert int(match["line"]) in _expected_lines(case, text), err


def test_unedited_dumps_verify(dumps):
    """The bases of the edits are accepted, so each rejection is the edit's."""
    for texts in dumps.values():
        for stage, text in texts.items():
            assert check_text(text, f"{stage}.tir") is None


def test_unexpected_token_column(dumps):
    text = replace_once(dumps["chain"]["capture"], "aten.relu.default(%0)", "aten.relu.default(%0))")
    with pytest.raises(TircError) as info:
        parse(text, FILE)
    line = line_of(text, "(%0))")
    col = text.splitlines()[line - 1].index("(%0))") + 4 + 1
    assert info.value.format().startswith(f"{FILE}:{line}:{col}: error: unexpected ')'")


def test_missing_section_points_at_the_header_stage(dumps):
    text = replace_once(dumps["chain"]["fusion"], "stage=fusion", "stage=memplan")
    err = check_text(text, FILE)
    col = text.index("memplan") + 1
    assert err is not None and err.format().startswith(f"{FILE}:1:{col}: error: "), err


def test_undefined_value_column(dumps):
    text = replace_once(dumps["chain"]["capture"], "aten.relu.default(%0)", "aten.relu.default(%nope)")
    with pytest.raises(TircError) as info:
        parse(text, FILE)
    line = line_of(text, "%nope")
    col = text.splitlines()[line - 1].index("%nope") + 1
    assert info.value.format() == f"{FILE}:{line}:{col}: error: use of undefined value %nope"


@pytest.mark.parametrize("cut", [0.2, 0.4, 0.6, 0.8])
def test_truncated_anywhere_reports_end_of_file(dumps, cut):
    text = _truncate(cut)(dumps["chain_unfused"]["memplan"])
    with pytest.raises(TircError) as info:
        parse(text, FILE)
    lines = text.splitlines()
    assert info.value.format().startswith(
        f"{FILE}:{len(lines)}:{len(lines[-1]) + 1}: error: unexpected end of file"
    )
