"""Memory planning: storage reuse through the pool, in-place writes where they
are legal and nowhere else, the checks of hand-edited memplan dumps, peak
memory in the manifest, and compiled programs that still match eager PyTorch
on both backends."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

import tirc
from ir_text import Kernel, Symbol, TircError, WrapperLine, parse, print_ir
from scheduler import check_memplan, peak_memory
from matching import assert_matches
from tirc.cli import main as tirc_main

# The Triton interpreter warns about lanes that are masked off on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

BACKENDS = ("cpp", "triton")
LOCATED = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.*)$")
F32_4x5 = 4 * 5 * 4  # bytes of one f32[4, 5] buffer


def chain(x):
    """Four same-size pointwise steps: each writes over the last (in place)."""
    return torch.sigmoid(torch.relu(x + 1) * 2)


def transposed(x):
    """%buf1 reads %buf0 transposed: same type, yet no in-place write."""
    return (x + 1).t() * 2


def reshaped(x):
    """%buf2 (f32[2, 10]) takes the storage of %buf0 (f32[4, 5]) from the pool."""
    b = ((x + 1).t() * 2).reshape(2, 10)
    return b * 3


def scanned(x):
    """A scan never writes over its input."""
    return (x + 1).cumsum(1) * 2


def with_reduction(x):
    a = x + 1
    return a * 2 + a.sum(1, keepdim=True)


def with_mm(x, w):
    """Extern results enter the pool too; the extern call itself never writes in place."""
    b = (x + 1) @ w
    return (torch.relu(b) * 2) @ w.t()


def epilogue(x, w, b):
    """A fused kernel (bias add, then GELU) whose first node reads the
    matmul result: the GELU writes over it."""
    return torch.nn.functional.gelu(x @ w + b) @ w.t()


def flipped_epilogue(x, w):
    """As `epilogue`, but a node before the writing one reads the matmul
    result at another index (flipped): no in-place write."""
    h = x @ w
    return (torch.relu(h.flip(1)) * 2 + h) @ w.t()


PROGRAMS = {
    "chain": (chain, lambda: [torch.randn(4, 5)]),
    "epilogue": (epilogue, lambda: [torch.randn(37, 33), torch.randn(33, 33), torch.randn(33)]),
    "flipped_epilogue": (flipped_epilogue, lambda: [torch.randn(37, 33), torch.randn(33, 33)]),
    "transposed": (transposed, lambda: [torch.randn(4, 4)]),
    "reshaped": (reshaped, lambda: [torch.randn(4, 5)]),
    "scanned": (scanned, lambda: [torch.randn(4, 5)]),
    "with_reduction": (with_reduction, lambda: [torch.randn(4, 5)]),
    "with_mm": (with_mm, lambda: [torch.randn(4, 4), torch.randn(4, 4)]),
}


# Kernels these tests plan build into a private cache (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.fixture(scope="module")
def unfused(private_cache, tmp_path_factory):
    """name -> dump directory of the program compiled with fusion=false (cpp)."""
    out = {}
    for name, (fn, make) in PROGRAMS.items():
        out[name] = tmp_path_factory.mktemp(name)
        torch.manual_seed(0)
        tirc.compile(fn, make(), dump_after="all", dump_dir=out[name], options={"fusion": False})
    return out


def _memplan(unfused, name: str) -> str:
    return (unfused[name] / "05-memplan.tir").read_text()


def _wrapper(text: str) -> list[str]:
    body = text[text.index("wrapper {") :].splitlines()[1:-1]
    return [line.strip() for line in body]


def _in_place(lines: list[str]) -> list[str]:
    """The reuse lines followed by a launch that reads the old buffer."""
    found = []
    for k, line in enumerate(lines):
        if line.startswith("reuse "):
            old = line.split()[1]
            call = next(x for x in lines[k + 1 :] if x.startswith(("launch", "extern")))
            if re.search(rf"\({old}[,)]|, {old}[,)]", call.split("->")[0]):
                found.append(line)
    return found


def _manifest_entry(directory: Path, stage: str) -> dict:
    files = json.loads((directory / "manifest.json").read_text())["files"]
    return next(f for f in files if f["stage"] == stage)


# ---- reuse and in place, as planned


def test_chain_writes_each_step_in_place(unfused):
    lines = _wrapper(_memplan(unfused, "chain"))
    assert lines == [
        "alloc %buf0",
        "launch @k0(%x) -> (%buf0)",
        "reuse %buf0 as %buf1",
        "launch @k1(%buf0) -> (%buf1)",
        "reuse %buf1 as %buf2",
        "launch @k2(%buf1) -> (%buf2)",
        "reuse %buf2 as %buf3",
        "launch @k3(%buf2) -> (%buf3)",
    ]


def test_peak_counts_reused_storage_once(unfused):
    entry = _manifest_entry(unfused["chain"], "memplan")
    assert entry["peak_bytes"] == F32_4x5 < 4 * F32_4x5
    module = parse(_memplan(unfused, "chain"))
    assert peak_memory(module) == F32_4x5


def test_pool_gives_storage_to_a_buffer_of_another_shape(unfused):
    lines = _wrapper(_memplan(unfused, "reshaped"))
    assert sum(line.startswith("reuse") for line in lines) == 1
    assert "reuse %buf0 as %buf2" in lines and _in_place(lines) == []
    code = (unfused["reshaped"] / "output_code.py").read_text()
    assert "buf2 = buf0.as_strided((2, 10), (10, 1))" in code
    # Three 80-byte buffers, at most two at once.
    assert _manifest_entry(unfused["reshaped"], "memplan")["peak_bytes"] == 2 * F32_4x5


def test_no_in_place_over_a_transposed_read(unfused):
    lines = _wrapper(_memplan(unfused, "transposed"))
    assert not any(line.startswith("reuse") for line in lines)
    assert "free %buf0" in lines


def test_no_in_place_into_a_scan(unfused):
    lines = _wrapper(_memplan(unfused, "scanned"))
    assert "alloc %buf1" in lines
    assert _in_place(lines) == ["reuse %buf1 as %buf2"]


def test_extern_results_are_written_over_but_calls_never_write_in_place(unfused):
    lines = _wrapper(_memplan(unfused, "with_mm"))
    # relu writes over %buf1, the first mm's result: a fresh tensor, as an
    # allocated buffer would be (mm does not return a view of an argument).
    at = lines.index("reuse %buf1 as %buf2")
    assert lines[at + 1] == "launch @k2(%buf1) -> (%buf2)"
    for k, line in enumerate(lines):
        if line.startswith("extern"):
            assert not lines[k - 1].startswith("reuse"), lines
    entry = _manifest_entry(unfused["with_mm"], "memplan")
    # Loop kernels x + 1, relu, * 2; extern calls: two mm, and w.t() passed as a strided view.
    assert (entry["kernels"], entry["extern_calls"]) == (3, 3)


def test_a_fused_epilogue_writes_over_what_its_first_node_reads(tmp_path):
    """Inductor's in-place update of a fused kernel, whose pointwise nodes
    it inlines into the one that writes."""
    for name, want in [("epilogue", ["reuse %buf0 as %buf2"]), ("flipped_epilogue", [])]:
        fn, make = PROGRAMS[name]
        torch.manual_seed(0)
        inputs = make()
        compiled = tirc.compile(fn, inputs, dump_after="memplan", dump_dir=tmp_path / name)
        lines = _wrapper((tmp_path / name / "05-memplan.tir").read_text())
        assert _in_place(lines) == want, lines
        fresh = make()
        torch.testing.assert_close(compiled(*fresh), fn(*fresh), rtol=1e-4, atol=1e-4)


def test_fused_chain_has_nothing_to_reuse(tmp_path):
    tirc.compile(chain, [torch.randn(4, 5)], dump_after="memplan", dump_dir=tmp_path)
    lines = _wrapper((tmp_path / "05-memplan.tir").read_text())
    assert lines == ["alloc %buf3", "launch @k0(%x) -> (%buf3)"]
    assert _manifest_entry(tmp_path, "memplan")["peak_bytes"] == F32_4x5


# ---- compiled programs match eager on fresh inputs


@pytest.mark.parametrize("fusion", [False, True], ids=["unfused", "fused"])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_matches_eager(name, backend, fusion):
    fn, make = PROGRAMS[name]
    torch.manual_seed(1)
    compiled = tirc.compile(fn, make(), backend=backend, options={"fusion": fusion})
    fresh = make()
    actual = compiled(*[x.clone() for x in fresh])
    assert_matches(actual, fn(*fresh))


def test_outputs_never_share_storage(tmp_path):
    def two_outputs(x):
        a = torch.relu(x + 1)
        return a * 2, a * 3, x * 1

    compiled = tirc.compile(two_outputs, [torch.randn(4, 5)], options={"fusion": False})
    x = torch.randn(4, 5)
    outs = compiled(x)
    pointers = [t.untyped_storage().data_ptr() for t in (*outs, x)]
    assert len(set(pointers)) == len(pointers)


# ---- dumps round-trip and re-feed


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_memplan_dump_round_trips_and_refeeds(unfused, name, tmp_path):
    text = _memplan(unfused, name)
    assert print_ir(parse(text)) == text
    path = tmp_path / "05-memplan.tir"
    path.write_text(text)
    assert tirc_main(["compile", str(path), "--dump-dir", str(tmp_path / "again")]) == 0
    again = (tmp_path / "again" / "output_code.py").read_bytes()
    assert again == (unfused[name] / "output_code.py").read_bytes()


# ---- hand-edited plans the verifier rejects


def _edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times"
    return text.replace(old, new)


def _line_of(text: str, needle: str) -> int:
    hits = [k for k, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(hits) == 1, f"{needle!r} is on lines {hits}"
    return hits[0]


def _as_aliasing_view(text: str) -> str:
    """The first mm replaced by a view of its argument (an extern that aliases)."""
    return _edit(text, "extern aten.mm.default(%buf0, %w)", "extern aten.view_as.default(%buf0, %w)")


BAD_PLANS = {
    # name: (program, edit of its memplan dump, line that is blamed, message parts)
    "reuse-dead input": (
        "chain",
        lambda t: _edit(t, "reuse %buf0 as %buf1", "reuse %x as %buf1"),
        "reuse %x as %buf1",
        ("[reuse-dead]", "%x is not a live buffer"),
    ),
    "reuse-dead twice": (
        "chain",
        lambda t: _edit(t, "reuse %buf1 as %buf2", "reuse %buf0 as %buf2"),
        "reuse %buf0 as %buf2",
        ("[reuse-dead]", "%buf0"),
    ),
    "reuse into an allocated buffer": (
        "chain",
        lambda t: _edit(t, "  reuse %buf0 as %buf1\n", "  alloc %buf1\n  reuse %buf0 as %buf1\n"),
        "reuse %buf0 as %buf1",
        ("[alloc-twice]", "%buf1 is already allocated"),
    ),
    "reuse-mismatch": (
        "with_reduction",
        lambda t: _edit(
            t,
            "  reuse %buf1 as %buf3\n  launch @k3(%buf1, %buf2) -> (%buf3)\n  free %buf2\n",
            "  reuse %buf2 as %buf3\n  launch @k3(%buf1, %buf2) -> (%buf3)\n  free %buf1\n",
        ),
        "reuse %buf2 as %buf3",
        ("[reuse-mismatch]", "%buf2 holds f32 on cpu, 16 bytes; %buf3 needs f32 on cpu, 80 bytes"),
    ),
    "read after the storage went": (
        "with_reduction",
        lambda t: _edit(
            t,
            "  launch @k2(%buf0) -> (%buf2)\n  free %buf0\n  reuse %buf1 as %buf3\n",
            "  reuse %buf1 as %buf3\n  launch @k2(%buf0) -> (%buf2)\n  free %buf0\n",
        ),
        "launch @k3",
        ("[use-after-free]", "@k3 reads %buf1 after its storage went to %buf3"),
    ),
    "in-place over a transposed read": (
        "transposed",
        lambda t: _edit(_edit(t, "  alloc %buf1\n", "  reuse %buf0 as %buf1\n"), "  free %buf0\n", ""),
        "reuse %buf0 as %buf1",
        ("[in-place]", "%buf1 reads %buf0 elsewhere than %buf1 is written"),
    ),
    "in-place into a scan": (
        "scanned",
        lambda t: _edit(_edit(t, "  alloc %buf1\n", "  reuse %buf0 as %buf1\n"), "  free %buf0\n", ""),
        "reuse %buf0 as %buf1",
        ("[in-place]", "@k1 holds a scan node"),
    ),
    "in-place into an extern call": (
        "with_mm",
        lambda t: _edit(
            t,
            "  extern @k1(%buf0, %w) -> (%buf1)\n  free %buf0\n  reuse %buf1 as %buf2\n",
            "  reuse %buf0 as %buf2\n  extern @k1(%buf0, %w) -> (%buf1)\n",
        ),
        "reuse %buf0 as %buf2",
        ("[in-place]", "an extern call never writes in place"),
    ),
    "overlap through an aliasing extern": (
        "with_mm",
        lambda t: _edit(
            _as_aliasing_view(t),
            "  free %buf0\n  reuse %buf1 as %buf2\n",
            "  reuse %buf0 as %buf2\n",
        ),
        "reuse %buf0 as %buf2",
        ("[overlap]", "%buf2 would share storage with %buf1, which is live"),
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_PLANS))
def test_bad_plan_is_rejected_with_its_rule(unfused, case, tmp_path, capsys):
    program, edit, blamed, parts = BAD_PLANS[case]
    text = edit(_memplan(unfused, program))
    path = tmp_path / "edited.tir"
    path.write_text(text)
    code = tirc_main(["verify", str(path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    match = LOCATED.match(err.strip())
    assert match and match["file"] == str(path), err
    assert int(match["line"]) == _line_of(text, blamed), err
    for part in parts:
        assert part in match["msg"], err


def test_aliasing_extern_keeps_its_storage_out_of_the_pool(unfused, tmp_path):
    """The planner never hands out storage an extern result may still view."""
    lower = _as_aliasing_view((unfused["with_mm"] / "02-lower.tir").read_text())
    path = tmp_path / "02-lower.tir"
    path.write_text(lower)
    out = tmp_path / "out"
    code = tirc_main(
        ["compile", str(path), "--option", "fusion=false", "--dump-after", "memplan", "--dump-dir", str(out)]
    )
    assert code == 0
    lines = _wrapper((out / "05-memplan.tir").read_text())
    assert not any(line.startswith("reuse %buf0 ") or line.startswith("reuse %buf1 ") for line in lines)


def test_in_place_into_a_fused_reduction_kernel_is_rejected(unfused):
    """A kernel holding a reduction loops over its input more than once: never in place.
    (The plan is built in memory: the fusion check of today refuses such kernels.)"""
    module = parse(_memplan(unfused, "with_reduction"))
    _, buf1, buf2, buf3 = (n.result for n in module.nodes)
    k0 = module.kernels[0]
    fused = Kernel(Symbol("k2"), (buf2, buf3), module.kernels[2].attrs)
    module.kernels = [k0, module.kernels[1], fused]
    x = module.inputs[0].value
    buf0 = module.nodes[0].result
    module.wrapper = [
        WrapperLine("alloc", None, (buf0,)),
        WrapperLine("launch", k0.name, (x,), (buf0,)),
        WrapperLine("alloc", None, (buf1,)),
        WrapperLine("launch", module.kernels[1].name, (buf0,), (buf1,)),
        WrapperLine("reuse", None, (buf0,), (buf3,)),
        WrapperLine("launch", fused.name, (buf0, buf1), (buf3,)),
        WrapperLine("free", None, (buf1,)),
    ]
    with pytest.raises(TircError, match=r"\[in-place\].*holds a reduction node"):
        check_memplan(module)
