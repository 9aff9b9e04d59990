"""The allow-list of ops IR text may name (ir_text/pure_ops.txt, op_policy):
every entry is pure by its schema, tirc's own lowering emits only listed
ops, and a traced program may call any op while its dump may not."""

from __future__ import annotations

import pytest
import torch

from ir_text import TircError, op_refusal, parse, pure_ops, resolve_target
from ir_text.op_policy import PURE_OPS_FILE, schema_refusal
from lowering import EXTERN_OPS


def test_every_listed_op_is_pure_by_its_schema():
    impure = {}
    for target in sorted(pure_ops()):
        overload = resolve_target(target)
        if overload is not None and schema_refusal(overload):
            impure[target] = schema_refusal(overload)
    assert impure == {}


def test_the_list_is_sorted_without_duplicates():
    entries = [line for line in PURE_OPS_FILE.read_text().splitlines() if line and not line.startswith("#")]
    assert entries == sorted(set(entries))


def test_the_ops_tirc_lowers_and_calls_are_listed():
    from lowering.pointwise import POINTWISE
    from lowering.rules import NODE_RULES
    from lowering.tensors import COPIES, VIEWS

    emitted = set(EXTERN_OPS) | {k for table in (NODE_RULES, POINTWISE, COPIES, VIEWS) for k in table}
    present = {t for t in emitted if isinstance(t, str) and resolve_target(t) is not None}
    assert sorted(present - pure_ops()) == []


@pytest.mark.parametrize(
    "target, why",
    [
        ("aten.from_file.default", "not on tirc's list"),
        ("aten.copy_.default", "not on tirc's list"),
        ("aten.__class__.__init__", "unknown op"),
        ("aten.not_an_op.default", "unknown op"),
        ("aten.add.Tensor", None),
        ("aten.__lshift__.Scalar", None),  # a real op, though a dunder by name
    ],
)
def test_op_refusal(target, why):
    problem = op_refusal(target)
    assert (problem is None) if why is None else (why in problem)


def test_the_schema_rule_names_what_an_op_writes_or_opens():
    assert "writes into its argument 'self'" in schema_refusal(torch.ops.aten.add_.Tensor)
    assert "writes into its argument 'out'" in schema_refusal(torch.ops.aten.add.out)
    assert "file argument 'filename'" in schema_refusal(torch.ops.aten.from_file.default)
    assert schema_refusal(torch.ops.aten.add.Tensor) is None


def test_python_attributes_never_resolve_as_ops():
    assert resolve_target("aten.__class__.__init__") is None
    assert resolve_target("__builtins__.open.default") is None
    assert resolve_target("aten.add.__call__") is None
    assert resolve_target("aten.add.Tensor") is torch.ops.aten.add.Tensor


TEXT = """tirc 0.1 stage=capture source="t.py"
options {backend = "cpp", device = "cpu", fusion = true, fusion_bisect_limit = -1, max_fusion_size = 64}
input %x : f32[4] {device = "cpu", seed = 0, strides = [1]}

%0 = aten.randn.default([4]) : f32[4]
%1 = aten.add.Tensor(%0, %x) : f32[4]
return (%1)
"""


def test_text_names_only_listed_ops_unless_the_caller_vouches_for_them():
    with pytest.raises(
        TircError, match=r"'aten.randn.default' is not on tirc's list .*\[rule: pure-ops\]"
    ) as err:
        parse(TEXT, "t.tir")
    assert (err.value.line, err.value.col) == (5, 1)
    with pytest.raises(TircError, match="pure-ops"):
        parse(TEXT, "t.tir", positions=False)  # parsed again for the position
    module = parse(TEXT, "t.tir", trusted_ops=frozenset({"aten.randn.default"}))
    assert [op.target for op in module.graph] == ["aten.randn.default", "aten.add.Tensor"]


def test_a_traced_program_with_an_unlisted_op_compiles_and_its_dump_is_refused(tmp_path):
    import tirc

    def noisy(x):
        return x + torch.randn(x.shape) * 0

    x = torch.randn(37)
    fn = tirc.compile(noisy, [x], dump_after=("capture",), dump_dir=str(tmp_path))
    torch.testing.assert_close(fn(x), x)
    text = (tmp_path / "01-capture.tir").read_text()
    assert "aten.randn.default" in text
    with pytest.raises(TircError, match=r"\[rule: pure-ops\]"):
        parse(text, "01-capture.tir")
