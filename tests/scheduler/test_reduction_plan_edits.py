"""Editing the fusion plan of reduction kernels by hand, and bisecting fusion.

A split or merge of a fusion dump re-feeds and still matches eager PyTorch;
an illegal plan is rejected with FILE:LINE:COL and the rule it breaks;
`fusion_bisect_limit=N` applies only the first N fusions."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from matching import assert_matches

import tirc
from ir_text import parse, print_ir
from tirc.commands import header_inputs
from tirc.dumps import comparable_files

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def forward(self, x, w, b):
        # Layer norm of an input: its variance reads the row's first element
        # (lowering/reductions.py), which a node of another kernel could not supply.
        y = torch.softmax(x * 2.0, -1)
        return F.layer_norm(x, (x.shape[-1],), w, b) + y


def get_inputs():
    return [torch.randn(37, 129), torch.randn(129), torch.randn(129)]


def get_init_inputs():
    return []
"""


def tirc_cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "tirc", *map(str, args)], capture_output=True, text=True, cwd=cwd or ROOT
    )


@pytest.fixture(scope="module")
def fused(tmp_path_factory):
    """The program's dumps: one fused kernel holding the whole chain."""
    work = tmp_path_factory.mktemp("fused")
    (work / "prog.py").write_text(PROGRAM)
    done = tirc_cli(
        "compile", work / "prog.py", "--dump-after=all", "--dump-dir", work / "d", "--save-inputs"
    )
    assert done.returncode == 0, done.stderr
    return work


def kernel_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("  kernel @")]


def kernel_nodes(line: str) -> list[str]:
    return line[line.index("fuse(") + 5 : line.index(")")].split(", ")


def with_plan(text: str, groups: list[list[str]]) -> str:
    """The fusion dump with its kernels replaced by `groups` (group attributes
    recomputed by hand from the node sizes: [37, 129] for reduction-anchored
    kernels, [4773, 1] for pointwise-only ones) and no refused lines."""
    lines = [line for line in text.splitlines() if not line.startswith(("  kernel @", "  refused("))]
    reductions = {m.group(1) for m in re.finditer(r"^(%buf\d+) = loop\.reduction", text, re.MULTILINE)}
    plan = []
    for k, group in enumerate(groups):
        attrs = "[37, 129]" if any(n in reductions for n in group) else _pointwise_group(text, group[0])
        plan.append(f"  kernel @k{k} = fuse({', '.join(group)}) {{group = {attrs}}}")
    at = lines.index("fusion {") + 1
    return "\n".join(lines[:at] + plan + lines[at:]) + "\n"


def _pointwise_group(text: str, name: str) -> str:
    ranges = re.search(rf"^{name} = loop\.pointwise \[([^\]]*)\]", text, re.MULTILINE).group(1)
    numel = 1
    for size in re.findall(r"< (\d+)", ranges):
        numel *= int(size)
    return f"[{numel}, 1]"


def refeed(work: Path, text: str, name: str):
    """Compile an edited dump saved beside the dumps (and their saved inputs)."""
    path = work / "d" / name if (work / "d").is_dir() else work / name
    path.write_text(text)
    return tirc_cli("compile", path, "--check", "--dump-dir", work / (name + ".out"))


def test_the_chain_is_one_kernel(fused):
    text = (fused / "d" / "04-fusion.tir").read_text()
    assert len(kernel_lines(text)) == 1


@pytest.mark.parametrize("cut", [1, 3, 5])
def test_a_split_kernel_refeeds_and_matches(fused, cut):
    text = (fused / "d" / "04-fusion.tir").read_text()
    nodes = kernel_nodes(kernel_lines(text)[0])
    done = refeed(fused, with_plan(text, [nodes[:cut], nodes[cut:]]), f"split{cut}.tir")
    assert done.returncode == 0, done.stderr
    assert "ok: outputs match" in done.stdout + done.stderr


def test_one_kernel_per_node_merged_back_matches(fused, tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    done = tirc_cli(
        "compile",
        tmp_path / "prog.py",
        "--dump-after=fusion",
        "--dump-dir",
        tmp_path / "d",
        "--option",
        "fusion=false",
    )
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "d" / "04-fusion.tir").read_text()
    nodes = [kernel_nodes(line)[0] for line in kernel_lines(text)]
    assert len(nodes) > 3
    merged = with_plan(text, [nodes])
    done = refeed(tmp_path, merged, "merged.tir")
    assert done.returncode == 0, done.stderr
    assert "ok: outputs match" in done.stdout + done.stderr


ILLEGAL = """
%buf0 = loop.reduction [i0 < 6, i1 < 1; r0 < 9] : f32[6, 1] strides [1, 1] {
  %0 = load %x[9*i0 + r0] : f32
  %1 = reduce(%0) {reduction = sum} : f32
  store %1
}
%buf1 = loop.reduction [i0 < 1, i1 < 9; r0 < 6] : f32[1, 9] strides [9, 1] {
  %0 = load %x[i1 + 9*r0] : f32
  %1 = reduce(%0) {reduction = max} : f32
  store %1
}
%buf2 = loop.pointwise [i0 < 6, i1 < 9] : f32[6, 9] strides [9, 1] {
  %0 = load %x[9*i0 + i1] : f32
  %1 = load %buf0[i0] : f32
  %2 = add(%0, %1) : f32
  store %2
}
%buf3 = loop.pointwise [i0 < 6] : f32[6] strides [1] {
  %0 = load %buf2[9*i0 + 8] : f32
  store %0
}
%buf4 = loop.pointwise [i0 < 5] : f32[5] strides [1] {
  %0 = load %x[i0] : f32
  store %0
}
return (%buf1, %buf2, %buf3, %buf4)

fusion {
PLAN}
"""

HEADER = (
    'tirc 0.1 stage=fusion source="edit.py"\n'
    'options {backend = "cpp", device = "cpu", fusion = true, fusion_bisect_limit = -1, max_fusion_size = 64}\n'
    'input %x : f32[6, 9] {device = "cpu", seed = 0, strides = [9, 1]}\n'
)


@pytest.mark.parametrize(
    "plan, rule",
    [
        # Two reductions of different (numel, rnumel).
        ("fuse(%buf0, %buf1) {group = [6, 9]}", "[group]"),
        # A per-row node reading per-element values of its kernel.
        ("fuse(%buf0, %buf2, %buf3) {group = [6, 9]}", "[level]"),
        # A node whose size fits neither a row nor an element of the kernel.
        ("fuse(%buf0, %buf4) {group = [6, 9]}", "[group]"),
        # A wrong group attribute.
        ("fuse(%buf0, %buf2) {group = [54, 1]}", "[stale-fact]"),
    ],
)
def test_illegal_plans_are_rejected_with_the_rule(tmp_path, plan, rule):
    kernels = [f"  kernel @k0 = {plan}\n"]
    planned = set(re.findall(r"%buf\d", plan))
    rest = [n for n in ("%buf0", "%buf1", "%buf2", "%buf3", "%buf4") if n not in planned]
    kernels += [f"  kernel @k{k + 1} = fuse({n}) {{group = {_group(n)}}}\n" for k, n in enumerate(rest)]
    text = HEADER + ILLEGAL.replace("PLAN", "".join(_in_order(kernels)))
    path = tmp_path / "04-fusion.tir"
    path.write_text(text)
    done = tirc_cli("verify", path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert re.match(rf"{re.escape(str(path))}:\d+:\d+: error: .*{re.escape(rule)}", done.stderr), done.stderr
    assert "Traceback" not in done.stderr


def _group(name: str) -> str:
    return {"%buf0": "[6, 9]", "%buf1": "[9, 6]", "%buf2": "[54, 1]", "%buf3": "[6, 1]", "%buf4": "[5, 1]"}[
        name
    ]


def _in_order(kernels: list[str]) -> list[str]:
    """Kernels ordered so that each reads only buffers of earlier ones."""
    rank = {"%buf0": 0, "%buf1": 1, "%buf2": 2, "%buf3": 3, "%buf4": 4}
    kernels = sorted(kernels, key=lambda k: rank[re.search(r"%buf\d", k).group(0)])
    return [re.sub(r"@k\d+", f"@k{n}", k, count=1) for n, k in enumerate(kernels)]


def test_the_legal_plan_of_the_same_program_verifies(tmp_path):
    plan = "".join(
        [
            "  kernel @k0 = fuse(%buf0, %buf2) {group = [6, 9]}\n",
            "  kernel @k1 = fuse(%buf1) {group = [9, 6]}\n",
            "  kernel @k2 = fuse(%buf3) {group = [6, 1]}\n",
            "  kernel @k3 = fuse(%buf4) {group = [5, 1]}\n",
        ]
    )
    path = tmp_path / "04-fusion.tir"
    path.write_text(HEADER + ILLEGAL.replace("PLAN", plan))
    done = tirc_cli("compile", path, "--check", "--dump-dir", tmp_path / "out")
    assert done.returncode == 0, done.stderr


def test_bisect_limit_applies_the_first_n_fusions(tmp_path):
    def fn(x, w, b):
        y = torch.softmax(x * 2.0, -1)
        return torch.nn.functional.layer_norm(y + x, (x.shape[-1],), w, b)

    inputs = [torch.randn(37, 129), torch.randn(129), torch.randn(129)]
    expected = fn(*inputs)
    unfused = tirc.compile(fn, inputs, options={"fusion_bisect_limit": 0})
    nodes = len(unfused.compiled.module.nodes)
    counts = []
    for limit in range(0, nodes + 1):
        program = tirc.compile(fn, inputs, options={"fusion_bisect_limit": limit})
        kernels = len(program.compiled.module.kernels)
        counts.append(kernels)
        # Each applied fusion merges two kernels into one.
        assert kernels == max(nodes - limit, 1)
        assert_matches(program(*inputs), expected)
        refusals = program.compiled.module.refusals
        if 0 < nodes - limit - 1 and kernels > 1:
            assert any("[bisect-limit]" in r.reason for r in refusals)
    assert counts[0] == nodes and counts[-1] == 1


def test_reduction_dumps_round_trip_and_refeed_byte_identically(fused):
    dumps = fused / "d"
    for stage in ("03-schedule", "04-fusion", "05-memplan"):
        text = (dumps / f"{stage}.tir").read_text()
        assert print_ir(parse(text, stage)) == text
    out = fused / "refed"
    done = tirc_cli("compile", dumps / "04-fusion.tir", "--dump-after=all", "--dump-dir", out)
    assert done.returncode == 0, done.stderr
    for name in ("05-memplan.tir", "output_code.py"):
        assert (out / name).read_bytes() == (dumps / name).read_bytes(), name


def test_replay_of_the_fused_dump_matches_with_saved_inputs(fused):
    module = parse((fused / "d" / "04-fusion.tir").read_text(), "04-fusion.tir")
    assert all(i.sha256 for i in module.inputs)
    done = tirc_cli("replay", fused / "d" / "04-fusion.tir")
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(header_inputs(module)) == 3


# ---- loop nests: kernels of the cpp backend that run several loop nests in order


def _nest_plan(first: str, rest: list[str]) -> str:
    kernels = [f"  kernel @k0 = {first}\n"]
    kernels += [f"  kernel @k{k + 1} = fuse({n}) {{group = {_group(n)}}}\n" for k, n in enumerate(rest)]
    return "".join(kernels)


def test_independent_reductions_as_loop_nests_refeed_and_match(tmp_path):
    plan = _nest_plan("fuse(%buf0, %buf2; %buf1) {group = [6, 9]}", ["%buf3", "%buf4"])
    path = tmp_path / "04-fusion.tir"
    path.write_text(HEADER + ILLEGAL.replace("PLAN", plan))
    done = tirc_cli("compile", path, "--check", "--dump-after=memplan", "--dump-dir", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    # One launch runs both nests; %buf2 leaves the kernel (k1 reads it).
    assert "launch @k0(%x) -> (%buf2, %buf1)" in (tmp_path / "out" / "05-memplan.tir").read_text()
    text = (tmp_path / "out" / "05-memplan.tir").read_text()
    assert print_ir(parse(text, "05-memplan.tir")) == text


@pytest.mark.parametrize(
    "first, rest, rule, backend",
    [
        ("fuse(%buf0; %buf1) {group = [6, 9]}", ["%buf2", "%buf3", "%buf4"], "[nests]", "triton"),
        ("fuse(%buf0; %buf4) {group = [6, 9]}", ["%buf1", "%buf2", "%buf3"], "[nest-group]", "cpp"),
        # A nest whose nodes are joined through a node of another nest.
        ("fuse(%buf0, %buf3; %buf2) {group = [6, 9]}", ["%buf1", "%buf4"], "[cycle]", "cpp"),
        ("fuse(%buf3; %buf2) {group = [6, 1]}", ["%buf0", "%buf1", "%buf4"], "[nest-order]", "cpp"),
    ],
)
def test_illegal_loop_nests_are_rejected(tmp_path, first, rest, rule, backend):
    header = HEADER.replace('backend = "cpp"', f'backend = "{backend}"')
    plan = _in_order([f"  kernel @k0 = {first}\n"] + _nest_plan("x", rest).splitlines(keepends=True)[1:])
    path = tmp_path / "04-fusion.tir"
    path.write_text(header + ILLEGAL.replace("PLAN", "".join(plan)))
    done = tirc_cli("verify", path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert rule in done.stderr and re.match(
        rf"{re.escape(str(path))}:\d+:\d+: error:", done.stderr
    ), done.stderr


def test_fused_dumps_and_code_are_identical_under_other_hash_seeds(fused, tmp_path):
    """Fusion decisions, nests and mappings never depend on set order or ids."""
    # A softmax, layer norm, and row and column sums: loop nests too.
    program = PROGRAM.replace(
        "return F.layer_norm(x, (x.shape[-1],), w, b) + y",
        "return F.layer_norm(y + x, (x.shape[-1],), w, b), x.sum(0), (x * 2).amax(1)",
    )
    assert program != PROGRAM
    (tmp_path / "prog.py").write_text(program)
    outs = []
    for seed in ("1", "31337"):
        out = tmp_path / f"seed{seed}"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "tirc",
                "compile",
                str(tmp_path / "prog.py"),
                "--dump-after=all",
                "--dump-dir",
                str(out),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert done.returncode == 0, done.stderr
        outs.append(comparable_files(out))  # the manifest without its timings, which differ
    assert outs[0] == outs[1]
    assert b"; %buf" in outs[0]["04-fusion.tir"]  # a kernel of several loop nests
