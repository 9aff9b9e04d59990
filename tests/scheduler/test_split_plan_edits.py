"""The split factor of a reduction over few long rows, as the fusion dump
records it (`split = N` on the kernel, scheduler/split.py and
codegen/splits.py): a dump re-fed as it is regenerates the same code; an
edited count or a removed attribute re-feeds and matches eager; a bad value
or a kernel that cannot be split is rejected with FILE:LINE:COL and `[split]`.
Sizes split with the default thresholds (CLI runs cannot shrink them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import torch


def f(x, y):
    return x / torch.norm(x), y.argmax()


def get_inputs():
    return [torch.randn(7, 10001), torch.randn(50001)]
"""


def tirc_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "tirc", *map(str, args)], capture_output=True, text=True, cwd=ROOT
    )


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    work = tmp_path_factory.mktemp("split")
    (work / "prog.py").write_text(PROGRAM)
    args = ("--entry", "f", "--backend", "triton", "--dump-after=all", "--dump-dir", work / "d")
    done = tirc_cli("compile", work / "prog.py", *args)
    assert done.returncode == 0, done.stderr
    return work / "d"


def kernel_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("  kernel @")]


def test_the_split_factor_and_the_refusal_are_in_the_fusion_and_memplan_dumps(dumps):
    fusion = (dumps / "04-fusion.tir").read_text()
    assert kernel_lines(fusion) == [
        "  kernel @k0 = fuse(%buf0, %buf1) {group = [1, 70007], split = 7}",
        "  kernel @k1 = fuse(%buf2) {group = [70007, 1]}",
        "  kernel @k2 = fuse(%buf3) {group = [1, 50001]}",
    ]
    assert "{reason = \"[split] %buf2 reads %buf1's whole-row result per element" in fusion
    assert "split = 7}" in (dumps / "05-memplan.tir").read_text()
    code = (dumps / "output_code.py").read_text()
    assert "".join(code.split()).count("_launch(k0_split,(1,7),") == 1


def test_the_fusion_dump_refeeds_to_the_same_code(dumps, tmp_path):
    done = tirc_cli("compile", dumps / "04-fusion.tir", "--dump-after=memplan", "--dump-dir", tmp_path)
    assert done.returncode == 0, done.stderr
    for name in ("05-memplan.tir", "output_code.py"):
        assert (tmp_path / name).read_bytes() == (dumps / name).read_bytes(), name


def test_an_edited_count_refeeds_and_matches(dumps, tmp_path):
    # 40 chunks of a whole number of blocks: the last ones lie past the row and reduce nothing.
    path = tmp_path / "04-fusion.tir"
    path.write_text((dumps / "04-fusion.tir").read_text().replace("split = 7}", "split = 40}"))
    done = tirc_cli("compile", path, "--check", "--dump-dir", tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    code = (tmp_path / "out" / "output_code.py").read_text()
    assert "_launch(k0_split,(1,40)," in "".join(code.split()) and "torch.empty((1, 40)" in code


def test_a_removed_attribute_is_not_split(dumps, tmp_path):
    path = tmp_path / "04-fusion.tir"
    path.write_text((dumps / "04-fusion.tir").read_text().replace(", split = 7}", "}"))
    done = tirc_cli("compile", path, "--check", "--dump-dir", tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "_split," not in (tmp_path / "out" / "output_code.py").read_text()


K0 = "  kernel @k0 = fuse(%buf0, %buf1) {group = [1, 70007], split = 7}"
K1 = "  kernel @k1 = fuse(%buf2) {group = [70007, 1]}"
K2 = "  kernel @k2 = fuse(%buf3) {group = [1, 50001]}"
MERGED = "  kernel @k0 = fuse(%buf0, %buf1, %buf2) {group = [1, 70007], split = 7}"


# name -> (the plan's kernels, the error after "[split] ")
BAD = {
    "zero": ([K0.replace("7}", "0}"), K1, K2], "@k0: expected a positive integer (chunks per row), got 0"),
    "negative": (
        [K0.replace("7}", "-2}"), K1, K2],
        "@k0: expected a positive integer (chunks per row), got -2",
    ),
    "a_list": (
        [K0.replace("7}", "[2, 2]}"), K1, K2],
        "@k0: expected a positive integer (chunks per row), got [2, 2]",
    ),
    "too_many": ([K0.replace("7}", "70000}"), K1, K2], "@k0: 70000 chunks per row is more than 65535"),
    "pointwise": (
        [K0, K1.replace("1]}", "1], split = 4}"), K2],
        "@k1: the kernel cannot be split: it holds no reduction",
    ),
    "second_pass": (
        [MERGED, K2],
        "@k0: the kernel cannot be split: %buf2 reads %buf1's whole-row result per element (a second pass)",
    ),
    "pinned": (
        [K0.replace("7}", "7, triton_config = [1, 2048, 8, 1]}"), K1, K2],
        "@k0: the kernel cannot be split: its triton_config is pinned",
    ),
    "argmax": (
        [K0, K1, K2.replace("1]}", "1], split = 4}")],
        "@k2: the kernel cannot be split: argmax partials do not combine by the reduction itself",
    ),
    "cpp_backend": ([K0, K1, K2], "@k0: the cpp backend does not split reductions into two kernels"),
}


def test_bad_split_attributes_are_rejected(dumps, tmp_path):
    """Each edit in a file of its own, all verified by one run (each run costs seconds)."""
    text = (dumps / "04-fusion.tir").read_text()
    lines = [line for line in text.splitlines() if not line.startswith(("  kernel @", "  refused("))]
    at = lines.index("fusion {") + 1
    expected = []
    for name, (kernels, message) in BAD.items():
        edited = lines[:at] + kernels + lines[at:]
        if name == "cpp_backend":
            edited = [line.replace('backend = "triton"', 'backend = "cpp"') for line in edited]
        path = tmp_path / f"{name}.tir"
        path.write_text("\n".join(edited) + "\n")
        kernel = message.split(":")[0]
        line = next(k for k, text in enumerate(edited, 1) if text.startswith(f"  kernel {kernel} "))
        expected.append((path, f"{path}:{line}:3: error: [split] {message}"))
    done = tirc_cli("verify", *(path for path, _ in expected))
    assert done.returncode == 2, done.stdout + done.stderr
    for _, error in expected:
        assert any(line.startswith(error) for line in done.stderr.splitlines()), done.stderr
